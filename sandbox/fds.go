package sandbox

import (
	"fmt"
	"math"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// CloseOnExecFrom marks every open descriptor numbered first or above
// close-on-exec, so that no program this process executes inherits them.
// A host started as `host run 7<secret 8>>log` holds descriptors it never
// opened and that are not close-on-exec (Go marks only its own): without
// this, every plugin it starts would inherit them. close_range(2) does it
// in one call; on a kernel without CLOSE_RANGE_CLOEXEC (before 5.11) each
// descriptor in /proc/self/fd is marked in turn.
func CloseOnExecFrom(first int) error {
	_, _, errno := unix.Syscall(unix.SYS_CLOSE_RANGE, uintptr(first), math.MaxUint32, unix.CLOSE_RANGE_CLOEXEC)
	if errno == 0 {
		return nil
	}
	f, err := os.Open("/proc/self/fd")
	if err != nil {
		return fmt.Errorf("close-on-exec from descriptor %d: close_range: %v; %w", first, errno, err)
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return fmt.Errorf("close-on-exec from descriptor %d: %w", first, err)
	}
	for _, n := range names {
		fd, err := strconv.Atoi(n)
		if err != nil || fd < first {
			continue
		}
		// The listing's own descriptor is among them: marking it is harmless.
		if _, err := unix.FcntlInt(uintptr(fd), unix.F_SETFD, unix.FD_CLOEXEC); err != nil && err != unix.EBADF {
			return fmt.Errorf("close-on-exec descriptor %d: %w", fd, err)
		}
	}
	return nil
}
