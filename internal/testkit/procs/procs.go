// Package procs finds the processes a test started, from /proc (Linux):
// tests use it to check that no plugin process outlives its host.
package procs

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// Gone reports whether pid has exited: no such process, or a zombie that
// nobody has reaped yet (an orphan's new parent may be slow to).
func Gone(pid int) bool {
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

// Running returns the live (not zombie) processes running bin: a binary,
// or a script (whose interpreter is the executable and whose command line
// names it).
func Running(bin string) []int {
	entries, _ := os.ReadDir("/proc")
	var out []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !runs(e.Name(), bin) || Gone(pid) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

func runs(name, bin string) bool {
	if exe, err := os.Readlink(filepath.Join("/proc", name, "exe")); err == nil && strings.TrimSuffix(exe, " (deleted)") == bin {
		return true
	}
	cmdline, err := os.ReadFile(filepath.Join("/proc", name, "cmdline"))
	return err == nil && slices.Contains(strings.Split(string(cmdline), "\x00"), bin)
}
