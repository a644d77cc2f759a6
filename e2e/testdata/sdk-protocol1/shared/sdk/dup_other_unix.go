//go:build unix && !linux

package sdk

import "golang.org/x/sys/unix"

// redirectFD makes to a copy of from.
func redirectFD(from, to int) error { return unix.Dup2(from, to) }
