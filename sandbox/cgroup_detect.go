package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// Where a host may make its plugins' cgroups: found once per process from
// /proc/self/mountinfo and /proc/self/cgroup, with cgroup v2 preferred.

// cgroupProbe is what detectCgroups found, once per process.
var cgroupProbe = sync.OnceValues(func() (*cgroupRoot, error) {
	return detectCgroups("/proc/self/mountinfo", "/proc/self/cgroup", os.Getpid())
})

// cgroupSupport fills s's cgroup fields.
func cgroupSupport(s *Support) {
	root, err := cgroupProbe()
	if err != nil {
		s.CgroupErr = err.Error()
		return
	}
	s.Cgroup = root.version
	for _, c := range []string{ControllerMemory, ControllerPids} {
		if _, ok := root.dirs[c]; ok {
			s.CgroupControllers = append(s.CgroupControllers, c)
		}
	}
}

type mountPoint struct {
	root, point, fstype string
	options             []string
}

func readMounts(path string) ([]mountPoint, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []mountPoint
	sc := bufio.NewScanner(io.LimitReader(f, 16<<20))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		// ID PARENT MAJ:MIN ROOT POINT OPTS [OPTIONAL...] - FSTYPE SOURCE SUPEROPTS
		pre, post, ok := strings.Cut(sc.Text(), " - ")
		if !ok {
			continue
		}
		a, b := strings.Fields(pre), strings.Fields(post)
		if len(a) < 5 || len(b) < 3 {
			continue
		}
		if b[0] != "cgroup" && b[0] != "cgroup2" {
			continue
		}
		out = append(out, mountPoint{root: unescapeMount(a[3]), point: unescapeMount(a[4]), fstype: b[0], options: strings.Split(b[2], ",")})
	}
	return out, sc.Err()
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// ownCgroups reads /proc/self/cgroup: the process's path in each hierarchy,
// by controller ("" for the v2 hierarchy).
func ownCgroups(path string) (map[string]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[1] == "" {
			out[""] = parts[2]
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			out[c] = parts[2]
		}
	}
	return out, nil
}

// folder is where cgroup path p shows under mount m ("" when the mount does
// not show it: the mount's root is elsewhere in the hierarchy).
func (m mountPoint) folder(p string) string {
	rel, ok := strings.CutPrefix(p, m.root)
	if m.root == "/" {
		rel, ok = p, true
	}
	if !ok || (rel != "" && !strings.HasPrefix(rel, "/")) {
		return ""
	}
	return filepath.Join(m.point, rel)
}

// detectCgroups finds where a process (pid) may make cgroups for the
// plugins it starts: its own cgroup's folder in the memory and pids
// hierarchies of cgroup v1, or in cgroup v2 where both controllers are
// available to its children.
func detectCgroups(mountinfo, cgroupFile string, pid int) (*cgroupRoot, error) {
	mounts, err := readMounts(mountinfo)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	own, err := ownCgroups(cgroupFile)
	if err != nil {
		return nil, fmt.Errorf("cgroups: %w", err)
	}
	var why []string
	// v2 first: a machine with both uses v2 for what it has bound there.
	for _, m := range mounts {
		if m.fstype != "cgroup2" {
			continue
		}
		p, ok := own[""]
		if !ok {
			continue
		}
		dir := m.folder(p)
		if dir == "" {
			continue
		}
		root, err := v2Root(dir, pid)
		if err == nil {
			return root, nil
		}
		why = append(why, err.Error())
	}
	root := &cgroupRoot{version: "v1", dirs: map[string]string{}}
	for _, c := range []string{ControllerMemory, ControllerPids} {
		p, ok := own[c]
		if !ok {
			continue
		}
		for _, m := range mounts {
			if m.fstype != "cgroup" || !slices.Contains(m.options, c) {
				continue
			}
			dir := m.folder(p)
			if dir == "" {
				continue
			}
			if err := probeWritable(dir, pid); err != nil {
				why = append(why, fmt.Sprintf("cgroup v1 %s: %v", c, err))
				break
			}
			root.dirs[c] = dir
			break
		}
	}
	if len(root.dirs) > 0 {
		return root, nil
	}
	if len(why) == 0 {
		return nil, errors.New("no cgroup hierarchy with the memory or pids controller is mounted")
	}
	return nil, errors.New(strings.Join(why, "; "))
}

// v2Root checks that dir, the host's cgroup v2 folder, can hold plugins'
// cgroups with memory and pids. Its children get a controller only when
// dir enables it in cgroup.subtree_control, which the kernel refuses while
// dir itself holds processes (unless it is the root): if the host is the
// only one there, it moves into a leaf of its own first (what systemd asks
// of a service given Delegate=yes).
func v2Root(dir string, pid int) (*cgroupRoot, error) {
	avail, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	have := strings.Fields(string(avail))
	for _, c := range []string{ControllerMemory, ControllerPids} {
		if !slices.Contains(have, c) {
			return nil, fmt.Errorf("cgroup v2: the host's cgroup %s has no %s controller (it offers: %s)", dir, c, orNone(have))
		}
	}
	if err := probeWritable(dir, pid); err != nil {
		return nil, fmt.Errorf("cgroup v2: %w", err)
	}
	enabled, _ := os.ReadFile(filepath.Join(dir, "cgroup.subtree_control"))
	on := strings.Fields(string(enabled))
	if !slices.Contains(on, ControllerMemory) || !slices.Contains(on, ControllerPids) {
		if err := enableV2(dir, pid); err != nil {
			return nil, fmt.Errorf("cgroup v2: %w", err)
		}
	}
	return &cgroupRoot{version: "v2", dirs: map[string]string{ControllerMemory: dir, ControllerPids: dir}}, nil
}

func enableV2(dir string, pid int) error {
	control := filepath.Join(dir, "cgroup.subtree_control")
	const want = "+memory +pids"
	if os.WriteFile(control, []byte(want), 0) == nil {
		return nil
	}
	procs, err := readPids(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return err
	}
	if len(procs) != 1 || procs[0] != pid {
		return fmt.Errorf("the host's cgroup %s holds other processes and does not enable memory and pids for its children (give the host a delegated cgroup of its own)", dir)
	}
	leaf := filepath.Join(dir, cgroupPrefix+"host")
	if err := os.Mkdir(leaf, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := os.WriteFile(filepath.Join(leaf, "cgroup.procs"), []byte(strconv.Itoa(pid)), 0); err != nil {
		return fmt.Errorf("move the host into %s: %w", leaf, unwrapPath(err))
	}
	if err := os.WriteFile(control, []byte(want), 0); err != nil {
		return fmt.Errorf("enable memory and pids in %s: %w", dir, unwrapPath(err))
	}
	return nil
}

func orNone(list []string) string {
	if len(list) == 0 {
		return "none"
	}
	return strings.Join(list, " ")
}

// probeWritable checks that a cgroup can be made in dir (and removes it),
// and removes what hosts that no longer run left there.
func probeWritable(dir string, pid int) error {
	probe := filepath.Join(dir, cgroupPrefix+"probe."+strconv.Itoa(pid))
	if err := os.Mkdir(probe, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
		return fmt.Errorf("cannot make a cgroup in %s: %w", dir, unwrapPath(err))
	}
	if err := os.Remove(probe); err != nil {
		return fmt.Errorf("cannot remove %s: %w", probe, err)
	}
	removeStale(dir)
	return nil
}

// removeStale removes the empty cgroups of hosts that are gone (a host
// killed before it could). One that still holds a process is left as it
// is: its host may be alive in another pid namespace, where its pid means
// nothing here, and killing its plugins would be worse than a leftover.
func removeStale(dir string) {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), cgroupPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		owner, _, _ := strings.Cut(rest, ".")
		pid, err := strconv.Atoi(owner)
		if err != nil || !errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) {
			continue
		}
		_ = os.Remove(filepath.Join(dir, e.Name())) // fails while a process is in it
	}
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

func readPids(path string) ([]int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, f := range strings.Fields(string(b)) {
		if n, err := strconv.Atoi(f); err == nil {
			out = append(out, n)
		}
	}
	return out, nil
}
