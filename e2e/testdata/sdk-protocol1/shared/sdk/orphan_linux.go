package sdk

import (
	"os"
	"os/signal"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// deathSignal is a signal of our own, not SIGTERM or SIGKILL: the kernel also
// sends the parent-death signal when only the forking host thread exits, and
// a dedicated signal lets the handler tell that apart (the parent pid did not
// change) instead of dying with a healthy host.
const deathSignal = unix.SIGUSR2

func parentDeathSignal(log hclog.Logger, parent int, orphaned func(how string)) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, deathSignal)
	if err := unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(deathSignal), 0, 0, 0); err != nil {
		signal.Stop(ch)
		log.Warn("parent-death signal unavailable; relying on the parent watch", "error", err)
		return
	}
	go func() {
		for range ch {
			if os.Getppid() != parent {
				orphaned("parent-death signal")
			}
			log.Debug("parent-death signal with the host still alive (a host thread ended); ignored")
		}
	}()
}
