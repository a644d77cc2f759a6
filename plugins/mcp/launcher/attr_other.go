//go:build unix && !linux

package launcher

import "syscall"

// Without a parent-death signal the launcher's poll of its parent pid is
// what ends the server when the bridge dies.
func launcherAttr() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }
