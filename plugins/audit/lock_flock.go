//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"os"
	"syscall"
)

// lockFile takes an exclusive lock on the log, without waiting (errLocked
// when another open file holds it; observe tries again): two writers would
// each continue the chain from their own last line and break it. The lock
// goes with the file when it is closed or the process dies.
func lockFile(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var lockErr error
	// Control rather than f.Fd(), which would switch the file to blocking
	// mode for good.
	if err := rc.Control(func(fd uintptr) {
		lockErr = syscall.Flock(int(fd), syscall.LOCK_EX|syscall.LOCK_NB)
	}); err != nil {
		return err
	}
	if lockErr == syscall.EWOULDBLOCK {
		return errLocked
	}
	return lockErr
}
