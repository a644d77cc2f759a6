package sandbox

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// Cgroups. RLIMIT_DATA bounds a process's private data only: a shared
// anonymous mapping or a memfd escapes it, and RLIMIT_NPROC counts a user's
// processes, not a plugin's (and never root's). Where the host may make
// cgroups (root on cgroup v1, or a cgroup v2 subtree delegated to it), each
// sandboxed plugin process gets one of its own, below the host's cgroup, in
// the memory and pids controllers: the kernel then counts every page the
// plugin and its descendants are charged for, and every task they start.
// The launcher joins it before anything else, so nothing the plugin runs
// starts outside it; the host kills whatever is left in it when the
// process ends, then removes it.
//
// The files are written directly (a few per launch) rather than through a
// cgroup library: the ones that exist pull in systemd's D-Bus client and
// eBPF for what is here a mkdir and three writes.

// Controllers the host uses.
const (
	ControllerMemory = "memory"
	ControllerPids   = "pids"
)

// cgroupPrefix starts the name of every cgroup a host makes, followed by the
// host's pid, so that one left by a host that was killed can be told apart
// and removed.
const cgroupPrefix = "plugkit."

// cgroupRoot is where a host makes its plugins' cgroups.
type cgroupRoot struct {
	version string // "v1" or "v2"
	// dirs maps each usable controller to the folder of the host's own
	// cgroup in its hierarchy (v2: the same folder for both).
	dirs map[string]string
}

// Cgroup is the cgroup of one plugin process: a folder in each hierarchy
// (v1), or one folder (v2).
type Cgroup struct {
	version string
	dirs    []string
	// memory: the cgroup has the memory controller, so it, not
	// RLIMIT_DATA, bounds the plugin's memory.
	memory bool
	closed atomic.Bool
}

var cgroupSeq atomic.Uint64

// NewCgroup makes a cgroup for one process of plugin name with limits l
// (memory and processes; zero leaves one unbounded), below the host's own.
// It fails when the host cannot make cgroups (see Support.Cgroup).
func NewCgroup(name string, l Limits) (*Cgroup, error) {
	root, err := cgroupProbe()
	if err != nil {
		return nil, err
	}
	leaf := cgroupPrefix + strconv.Itoa(os.Getpid()) + "." + cgroupName(name) + "." + strconv.FormatUint(cgroupSeq.Add(1), 10)
	_, memory := root.dirs[ControllerMemory]
	cg := &Cgroup{version: root.version, memory: memory}
	seen := map[string]bool{}
	for _, c := range []string{ControllerMemory, ControllerPids} {
		base, ok := root.dirs[c]
		if !ok || seen[base] {
			continue
		}
		seen[base] = true
		dir := filepath.Join(base, leaf)
		if err := os.Mkdir(dir, 0o755); err != nil {
			cg.Close()
			return nil, fmt.Errorf("cgroup: %w", err)
		}
		cg.dirs = append(cg.dirs, dir)
	}
	if err := cg.limit(root, l); err != nil {
		cg.Close()
		return nil, err
	}
	return cg, nil
}

// cgroupName keeps a plugin's name readable in a cgroup's.
func cgroupName(name string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
}

func (cg *Cgroup) limit(root *cgroupRoot, l Limits) error {
	set := func(c, file, value string, optional bool) error {
		base, ok := root.dirs[c]
		if !ok {
			return nil
		}
		path := filepath.Join(base, filepath.Base(cg.dirs[0]), file)
		if err := os.WriteFile(path, []byte(value), 0); err != nil {
			if optional && errors.Is(err, os.ErrNotExist) {
				return nil
			}
			return fmt.Errorf("cgroup: set %s to %s: %w", file, value, unwrapPath(err))
		}
		return nil
	}
	// The first failure says it all (one line: the host logs it as such).
	if l.Memory > 0 {
		mem := strconv.FormatUint(l.Memory, 10)
		if root.version == "v2" {
			if err := set(ControllerMemory, "memory.max", mem, false); err != nil {
				return err
			}
			// Swap would let the plugin hold more than the limit.
			if err := set(ControllerMemory, "memory.swap.max", "0", true); err != nil {
				return err
			}
		} else {
			if err := set(ControllerMemory, "memory.limit_in_bytes", mem, false); err != nil {
				return err
			}
			if err := set(ControllerMemory, "memory.memsw.limit_in_bytes", mem, true); err != nil {
				return err
			}
		}
	}
	if l.Processes > 0 {
		return set(ControllerPids, "pids.max", strconv.FormatUint(l.Processes, 10), false)
	}
	return nil
}

// OOMKills is how many processes the kernel has killed in the cgroup for
// reaching its memory limit; 0 when it cannot tell.
func (cg *Cgroup) OOMKills() int {
	// Both files have a line "oom_kill N".
	for _, line := range strings.Split(cg.memoryFile("memory.oom_control", "memory.events"), "\n") {
		if v, ok := strings.CutPrefix(line, "oom_kill "); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
	return 0
}

// LimitReached reports whether the cgroup's memory reached its limit at
// least once (the kernel had to reclaim, refuse or kill to stay under it).
func (cg *Cgroup) LimitReached() bool {
	text := cg.memoryFile("memory.failcnt", "memory.events")
	if cg != nil && cg.version == "v2" {
		for _, line := range strings.Split(text, "\n") {
			if v, ok := strings.CutPrefix(line, "max "); ok {
				n, _ := strconv.Atoi(strings.TrimSpace(v))
				return n > 0
			}
		}
		return false
	}
	n, _ := strconv.Atoi(strings.TrimSpace(text))
	return n > 0
}

// MemoryBytes is the memory charged to the cgroup now (its processes'
// pages, shared memory and page cache included); 0 when it cannot tell.
func (cg *Cgroup) MemoryBytes() int64 {
	n, _ := strconv.ParseInt(strings.TrimSpace(cg.memoryFile("memory.usage_in_bytes", "memory.current")), 10, 64)
	return n
}

// memoryFile reads a file of the memory controller, named v1 or v2 by the
// cgroup's version; "" when there is none. On v1 the memory hierarchy's
// folder comes first in dirs when the host has one.
func (cg *Cgroup) memoryFile(v1, v2 string) string {
	if cg == nil || len(cg.dirs) == 0 {
		return ""
	}
	name := v1
	if cg.version == "v2" {
		name = v2
	}
	b, _ := os.ReadFile(filepath.Join(cg.dirs[0], name))
	return string(b)
}

// Dirs are the cgroup's folders: the launcher joins each.
func (cg *Cgroup) Dirs() []string { return slices.Clone(cg.dirs) }

// Close kills every process left in the cgroup (what the plugin started,
// detached or not) and removes it. Call it once the plugin's process has
// ended.
func (cg *Cgroup) Close() error {
	if cg == nil || !cg.closed.CompareAndSwap(false, true) || len(cg.dirs) == 0 {
		return nil
	}
	procs := filepath.Join(cg.dirs[0], "cgroup.procs")
	if cg.version == "v2" {
		_ = os.WriteFile(filepath.Join(cg.dirs[0], "cgroup.kill"), []byte("1"), 0)
	}
	var errs []error
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids, err := readPids(procs)
		if err != nil || len(pids) == 0 {
			break
		}
		if time.Now().After(deadline) {
			errs = append(errs, fmt.Errorf("cgroup %s: %d processes would not end", cg.dirs[0], len(pids)))
			break
		}
		for _, p := range pids {
			_ = syscall.Kill(p, syscall.SIGKILL)
		}
		time.Sleep(10 * time.Millisecond)
	}
	for _, dir := range cg.dirs {
		// A cgroup whose last task has just exited may still be busy for
		// a moment.
		var err error
		for range 50 {
			if err = os.Remove(dir); err == nil || errors.Is(err, os.ErrNotExist) {
				err = nil
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// joinCgroups moves the launcher into each of dirs (before it confines
// itself further or execs the plugin).
func joinCgroups(dirs []string) error {
	pid := []byte(strconv.Itoa(os.Getpid()))
	for _, d := range dirs {
		if err := os.WriteFile(filepath.Join(d, "cgroup.procs"), pid, 0); err != nil {
			return fmt.Errorf("join cgroup %s: %w", d, unwrapPath(err))
		}
	}
	return nil
}
