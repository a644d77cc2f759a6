package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, what /proc/PID/stat counts CPU time in: 100 on
// every Linux architecture Go runs on.
const clockTicks = 100

type procInfo struct {
	pid, ppid int
	name      string
	cpuTicks  uint64 // utime + stime, and cutime + cstime: children it reaped
}

// readProcs reads every process's parent, name and CPU time.
func readProcs() map[int]procInfo {
	out := map[int]procInfo{}
	dirs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range dirs {
		b, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue
		}
		s := string(b)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			continue
		}
		f := strings.Fields(s[close+1:])
		if len(f) < 15 {
			continue
		}
		pid, _ := strconv.Atoi(strings.TrimSpace(s[:open]))
		ppid, _ := strconv.Atoi(f[1])
		ut, _ := strconv.ParseUint(f[11], 10, 64)
		st, _ := strconv.ParseUint(f[12], 10, 64)
		cut, _ := strconv.ParseUint(f[13], 10, 64)
		cst, _ := strconv.ParseUint(f[14], 10, 64)
		out[pid] = procInfo{pid: pid, ppid: ppid, name: s[open+1 : close], cpuTicks: ut + st + cut + cst}
	}
	return out
}

// tree returns root and its descendants among procs.
func tree(procs map[int]procInfo, root int) []procInfo {
	children := map[int][]int{}
	for _, p := range procs {
		children[p.ppid] = append(children[p.ppid], p.pid)
	}
	var out []procInfo
	var walk func(int)
	walk = func(pid int) {
		p, ok := procs[pid]
		if !ok {
			return
		}
		out = append(out, p)
		for _, c := range children[pid] {
			walk(c)
		}
	}
	walk(root)
	return out
}

// treeCPU is the CPU time, in ticks, of root and its descendants (those
// that ended counted once reaped, in their parent's), and the part of it
// spent by the upstream server's processes (upstreamServer). A child that ended but is not reaped yet is missed:
// the figures are lower bounds.
func treeCPU(root int) (all, upstream uint64) {
	for _, p := range tree(readProcs(), root) {
		all += p.cpuTicks
		if upstreamServer(p.pid) {
			upstream += p.cpuTicks
		}
	}
	return all, upstream
}

// memory returns a process's resident set and the anonymous part of it
// (its heap, stacks and written data, which no other process shares),
// in MiB, from /proc/PID/smaps_rollup. The rest is mostly the pages of its
// binary, held once however many processes run that binary.
func memory(pid int) (rss, anon float64) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 64)
		switch k {
		case "Rss":
			rss = kb / 1024
		case "Anonymous":
			anon = kb / 1024
		}
	}
	return rss, anon
}

// rssList names each process of root's tree with its resident set and,
// in parentheses, the anonymous part of it.
func rssList(root int) string {
	var parts []string
	for _, p := range tree(readProcs(), root) {
		if p.name == "sh" {
			continue // npx/exec wrappers, if any
		}
		rss, anon := memory(p.pid)
		parts = append(parts, fmt.Sprintf("%s %.0f (%.1f)", p.name, rss, anon))
	}
	return strings.Join(parts, ", ")
}

// upstreamServer says whether pid runs the upstream server: node with
// server-everything's script as its first argument (a gateway's own
// command line may name the script too, among its arguments).
func upstreamServer(pid int) bool {
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	args := strings.Split(string(cmd), "\x00")
	return len(args) > 1 && strings.HasSuffix(args[1], "server-everything/dist/index.js")
}
