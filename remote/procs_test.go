package remote_test

import (
	"syscall"

	"github.com/plugkit-go/plugkit/internal/testkit/procs"
)

// processGone reports whether pid has exited (procs.Gone).
func processGone(pid int) bool { return procs.Gone(pid) }

func killPid(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
