package main

import (
	"fmt"
	"os"
	"time"

	"golang.org/x/sys/unix"
)

// makeNoise writes to stdout for the life of the process, as a library that
// kept os.Stdout would: the handshake and the calls must survive it. It
// starts once Serve has pointed fd 1 at stderr, since nothing can protect
// output printed before Serve runs.
func makeNoise() {
	stdout := os.Stdout
	go func() {
		for !fdIsStderr(1) {
			time.Sleep(100 * time.Microsecond)
		}
		for i := 0; ; i++ {
			fmt.Fprintln(stdout, "noise on the original stdout", i)
			fmt.Println("noise on os.Stdout", i)
			_, _ = unix.Write(1, []byte("noise on fd 1\n"))
			time.Sleep(2 * time.Millisecond)
		}
	}()
}

// fdIsStderr reports whether fd refers to the same open file as fd 2.
func fdIsStderr(fd int) bool {
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Fstat(2, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}

// init prints as a plugin's init function or a library's banner would,
// before anything the plugin's main can do: the SDK's own init, which runs
// first, must keep it out of the handshake.
func init() {
	if os.Getenv("TESTPLUGIN_EARLY_NOISE") != "" {
		fmt.Println("noise from init")
		fmt.Print("noise from init without a newline ")
		_, _ = unix.Write(1, []byte("noise from init on fd 1\n"))
	}
}
