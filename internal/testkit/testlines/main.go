// Command testlines runs `go test -json` (the command line it is given)
// and prints go test's usual lines, each package's as soon as it ends:
// without -json, go test prints packages in the order of their list, so
// `make test` sat silent for minutes behind its slowest package while
// others had finished. Every two quiet minutes it names the packages still
// running. Its exit code is go test's, or 1 when a package failed.
package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: testlines GO test -json ARGS...")
		os.Exit(2)
	}
	cmd := exec.Command(os.Args[1], os.Args[2:]...)
	cmd.Stdin, cmd.Stderr = os.Stdin, os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "testlines:", err)
		os.Exit(2)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testlines:", err)
		os.Exit(2)
	}
	l := newLines(os.Stdout)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(10 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case now := <-t.C:
				l.still(now, 2*time.Minute)
			}
		}
	}()
	readErr := l.read(stdout)
	close(done)
	err = cmd.Wait()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		fmt.Fprintln(os.Stderr, "testlines:", err)
		code = 2
	}
	if readErr != nil {
		fmt.Fprintln(os.Stderr, "testlines:", readErr)
	}
	if code == 0 && (l.hasFailed() || readErr != nil) {
		code = 1
	}
	os.Exit(code)
}
