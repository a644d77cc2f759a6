package procs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
)

// Memory is a process's memory as /proc/PID/smaps_rollup sums it, in bytes.
// PSS (the proportional set) counts each page shared with n other
// processes as 1/(n+1) of a page, so the PSS of a set of processes adds up
// to the memory they hold together: a binary's pages mapped by ten
// processes count once in their sum, not ten times as in their RSS.
//
// Read here rather than with prometheus/procfs, whose ProcSMapsRollup
// leaves out Pss_Anon and Pss_File (kernel 5.13 and later).
type Memory struct {
	RSS, PSS         uint64
	PSSAnon, PSSFile uint64 // zero on kernels before 5.13
	Anonymous        uint64 // resident pages that belong to no file
}

// Add adds o to m, field by field.
func (m *Memory) Add(o Memory) {
	m.RSS += o.RSS
	m.PSS += o.PSS
	m.PSSAnon += o.PSSAnon
	m.PSSFile += o.PSSFile
	m.Anonymous += o.Anonymous
}

// ReadMemory reads pid's /proc/PID/smaps_rollup (Linux 4.14 and later).
func ReadMemory(pid int) (Memory, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps_rollup")
	if err != nil {
		return Memory{}, fmt.Errorf("memory of process %d: %w", pid, err)
	}
	var m Memory
	fields := map[string]*uint64{
		"Rss": &m.RSS, "Pss": &m.PSS, "Pss_Anon": &m.PSSAnon, "Pss_File": &m.PSSFile, "Anonymous": &m.Anonymous,
	}
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		// "Pss:                 452 kB"
		k, v, ok := bytes.Cut(sc.Bytes(), []byte(":"))
		if !ok {
			continue
		}
		p := fields[string(k)]
		if p == nil {
			continue
		}
		kb, err := strconv.ParseUint(string(bytes.TrimSpace(bytes.TrimSuffix(bytes.TrimSpace(v), []byte("kB")))), 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("memory of process %d: %s: %w", pid, sc.Bytes(), err)
		}
		*p = kb << 10
	}
	return m, nil
}
