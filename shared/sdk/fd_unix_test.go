//go:build unix

package sdk

import "golang.org/x/sys/unix"

// fdIsStderr reports whether fd refers to the same open file as fd 2.
func fdIsStderr(fd int) bool {
	var a, b unix.Stat_t
	if unix.Fstat(fd, &a) != nil || unix.Fstat(2, &b) != nil {
		return false
	}
	return a.Dev == b.Dev && a.Ino == b.Ino
}
