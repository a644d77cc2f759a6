// Command cgrouphelper is what sandbox's cgroup tests start in a cgroup:
// "shared" holds shared memory (anonymous, then memfd) 64 MiB at a time up
// to 1 GiB, which RLIMIT_DATA does not count; "fork" starts sleepers, each
// in a session of its own, until a start fails, prints their pids, and
// exits leaving them running. It is built without the race detector, whose
// own mappings would not fit the limits.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

func main() {
	switch os.Args[1] {
	case "shared":
		for i := 1; i <= 16; i++ {
			flags, fd := unix.MAP_SHARED|unix.MAP_ANONYMOUS, -1
			if i%2 == 0 {
				var err error
				if fd, err = unix.MemfdCreate("plugkit-test", 0); err != nil {
					fail("memfd", err)
				}
				if err := unix.Ftruncate(fd, 64<<20); err != nil {
					fail("ftruncate", err)
				}
				flags = unix.MAP_SHARED
			}
			b, err := unix.Mmap(fd, 0, 64<<20, unix.PROT_READ|unix.PROT_WRITE, flags)
			if err != nil {
				fail("mmap", err)
			}
			for j := 0; j < len(b); j += 4096 {
				b[j] = 1
			}
			fmt.Printf("held %d MiB\n", i*64)
		}
	case "fork":
		var pids []string
		for range 200 {
			c := exec.Command("/bin/sleep", "60")
			c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
			if err := c.Start(); err != nil {
				fmt.Printf("start %d: %v\n", len(pids)+1, err)
				break
			}
			pids = append(pids, strconv.Itoa(c.Process.Pid))
		}
		fmt.Printf("started %d: %s\n", len(pids), strings.Join(pids, " "))
	}
}

func fail(what string, err error) {
	fmt.Println(what+":", err)
	os.Exit(2)
}
