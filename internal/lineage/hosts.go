package lineage

import (
	"os"
	"path/filepath"
	"sort"
	"strconv"
)

// Host is a running host of this process's user, as its registry entry
// and /proc say.
type Host struct {
	PID    int
	Socket string // its admin socket, absolute
}

// Hosts lists the running hosts of this process's user that have an admin
// socket, by pid. An entry whose process is gone, or is another process
// with its pid, is skipped, and so is a registry folder others can write.
// The CLI uses it to find a host whose deployment file it cannot read.
func Hosts() []Host {
	dir := registryDir(os.Geteuid())
	if trusted(dir, os.Geteuid()) != nil {
		return nil
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []Host
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		rec, err := readRecord(filepath.Join(dir, e.Name()))
		if err != nil || rec.socket == "" {
			continue
		}
		if st, err := readStat(pid); err == nil && st.start == rec.start {
			out = append(out, Host{PID: pid, Socket: rec.socket})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].PID < out[j].PID })
	return out
}
