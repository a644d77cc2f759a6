package remote

import (
	"os"
	"syscall"
	"time"
)

// binaryID identifies a binary's file as it was when a process was started
// from it: while the file keeps its device, inode, size and modification
// time, its content is what the process runs.
type binaryID struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

func statBinary(path string) (binaryID, bool) {
	fi, err := os.Stat(path)
	if err != nil {
		return binaryID{}, false
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return binaryID{}, false
	}
	return binaryID{dev: uint64(st.Dev), ino: st.Ino, size: fi.Size(), mtime: fi.ModTime()}, true
}

// Pin records sha256 as the pin of the running plugin name's binary without
// restarting it, when the file its process was started from has not
// changed since: pinning (or unpinning) the binary that runs is not a new
// version. The pin is checked at the next start. It reports whether it did;
// when it did not, the plugin must be reloaded for the pin to apply.
func (m *Manager) Pin(name, sha256 string) bool {
	mp := m.lookup(name)
	if mp == nil {
		return false
	}
	cur, ok := m.k.Scope(name)
	if !ok {
		return false
	}
	mp.mu.Lock()
	defer mp.mu.Unlock()
	in := mp.procs[cur]
	if in == nil || in.exited() || !in.binaryOK {
		return false
	}
	now, ok := statBinary(mp.spec.Path)
	if !ok || now != in.binary {
		return false
	}
	mp.spec.SHA256 = sha256
	if p := mp.plan; p != nil {
		p.mu.Lock()
		p.pin = &sha256
		p.mu.Unlock()
	}
	return true
}
