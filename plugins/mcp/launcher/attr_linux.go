package launcher

import "syscall"

// launcherAttr makes the launcher get SIGTERM when the bridge dies, set
// between fork and exec so there is no window. The signal is tied to the
// bridge thread that forked it, so the launcher checks that its parent
// really changed before it acts (see launch).
func launcherAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
