package remote_test

import (
	"bytes"
	"os"
	"strconv"
	"syscall"
)

// processGone reports whether pid has exited: no such process, or a zombie
// that nobody has reaped yet (an orphan's new parent may be slow to).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); err == syscall.ESRCH {
		return true
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	// The state follows the command name, which is in parentheses and may
	// itself hold spaces or parentheses.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return false
	}
	switch stat[i+2] {
	case 'Z', 'X', 'x':
		return true
	}
	return false
}

func killPid(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }
