// Package lineage tells whether a process is a plugin of a plugkit host,
// or a descendant of one: the admin socket refuses such a peer, and the
// CLI refuses such a server, so that no plugin drives or impersonates a
// host's control plane.
//
// Three marks are read from /proc (Linux), none of which a sandboxed
// plugin can remove:
//
//   - its ancestry: a plugin is a child of its host, and whatever it starts
//     descends from it. Every host records itself (its pid, start time and
//     admin socket) in a registry folder only its user can write
//     (Register), so a host recognises the plugins of any other host of its
//     user, and of root.
//   - its mount namespace: where the kernel allows one, the sandbox
//     launcher gives each sandboxed plugin a mount namespace of its own,
//     holding a read-only tmpfs named sandbox.MarkSource (mounted on the
//     registry folder) and with the hosts' admin sockets hidden. Everything
//     the plugin starts stays in that namespace, or in one copied from it,
//     with the mark: a descendant that detaches by double fork (re-parented
//     to init) keeps it, and so does one whose host has exited. A peer in
//     another mount namespace than the checking process's is refused when
//     its /proc/PID/mountinfo shows the mark.
//   - its cgroup: where the host gives each sandboxed plugin a cgroup of its
//     own (CgroupMark is in its path), the plugin and everything it starts
//     stay in it, detached or not: a sandbox cannot write to /sys/fs/cgroup.
//
// A descendant of an unsandboxed plugin, or of a sandboxed one on a kernel
// that gives it no mount namespace (Support.MountNS), that detaches leaves
// the ancestry; only a cgroup holds it then.
package lineage

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// CgroupMark is the name of the cgroup folder under which a host puts its
// plugins' cgroups: a process whose cgroup path holds it is a plugin.
const CgroupMark = "plugkit.plugins"

// stat is what /proc/PID/stat says of a process that matters here.
type stat struct {
	ppid  int
	start uint64 // clock ticks after boot
}

func readStat(pid int) (stat, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return stat{}, err
	}
	// The command name is in parentheses and may hold anything: the fields
	// are counted from the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return stat{}, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); ppid is field 4, starttime field 22.
	if len(f) < 20 {
		return stat{}, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	ppid, err1 := strconv.Atoi(f[1])
	start, err2 := strconv.ParseUint(f[19], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return stat{}, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return stat{ppid: ppid, start: start}, nil
}

// RegistryDir is the folder where hosts of user uid record themselves.
func RegistryDir(uid int) string { return registryDir(uid) }

func registryDir(uid int) string {
	return filepath.Join(os.TempDir(), "plugkit-hosts-"+strconv.Itoa(uid))
}

var (
	regMu    sync.Mutex
	regCount int
)

// Register records the calling process as a host, with its admin socket
// (absolute; "" for none), until the returned function is called (every
// Register of a process shares one record, the first one's socket).
// The registry folder is made 0755 and refused when another user owns it
// or its group or others can write to it: whoever could write there could
// hide a host from the check.
func Register(adminSocket string) (unregister func(), err error) {
	regMu.Lock()
	defer regMu.Unlock()
	dir := registryDir(os.Geteuid())
	entry := filepath.Join(dir, strconv.Itoa(os.Getpid()))
	if regCount == 0 {
		if err := os.Mkdir(dir, 0o755); err != nil && !errors.Is(err, os.ErrExist) {
			return nil, fmt.Errorf("host registry: %w", err)
		}
		if err := trusted(dir, os.Geteuid()); err != nil {
			return nil, err
		}
		self, err := readStat(os.Getpid())
		if err != nil {
			return nil, fmt.Errorf("host registry: %w", err)
		}
		// One line for the start time, one for the admin socket
		// (Sockets), which the sandbox launcher hides from plugins.
		record := strconv.FormatUint(self.start, 10) + "\n" + adminSocket + "\n"
		if err := os.WriteFile(entry, []byte(record), 0o644); err != nil {
			return nil, fmt.Errorf("host registry: %w", err)
		}
	}
	regCount++
	var once sync.Once
	return func() {
		once.Do(func() {
			regMu.Lock()
			defer regMu.Unlock()
			if regCount--; regCount == 0 {
				_ = os.Remove(entry)
			}
		})
	}, nil
}

// trusted refuses a registry folder that uid does not own or that others
// may write to.
func trusted(dir string, uid int) error {
	fi, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("host registry: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok || !fi.IsDir() || int(st.Uid) != uid || fi.Mode().Perm()&0o022 != 0 {
		return fmt.Errorf("host registry %s: not a folder of uid %d that only it can write to", dir, uid)
	}
	return nil
}

// isHost reports whether pid is a registered host of uid (or this
// process): its record names its start time, so a pid reused by another
// process is not taken for it.
func isHost(pid int, start uint64, uids []int) bool {
	if pid == os.Getpid() {
		regMu.Lock()
		defer regMu.Unlock()
		return regCount > 0
	}
	for _, uid := range uids {
		dir := registryDir(uid)
		if trusted(dir, uid) != nil {
			continue
		}
		if rec, err := readRecord(filepath.Join(dir, strconv.Itoa(pid))); err == nil && rec.start == start {
			return true
		}
	}
	return false
}

// PluginError says a process is a plugin of a host, or descends from one.
type PluginError struct {
	PID  int
	Why  string
	Host int // the host it descends from; 0 when its cgroup or mounts told
}

func (e *PluginError) Error() string { return fmt.Sprintf("process %d %s", e.PID, e.Why) }

// Check returns a *PluginError when pid is a plugin of a host (this one,
// or one registered by this user or root) or descends from one, nil when
// it is neither, and another error when it cannot tell (the process has
// gone): the caller refuses then too.
func Check(pid int) error {
	if pid <= 0 {
		return fmt.Errorf("no process id for the peer")
	}
	if cg, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cgroup"); err == nil && bytes.Contains(cg, []byte("/"+CgroupMark+"/")) {
		return &PluginError{PID: pid, Why: "runs in a plugin's cgroup"}
	} else if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	if err := checkMount(pid); err != nil {
		return err
	}
	uids := []int{os.Geteuid()}
	if uids[0] != 0 {
		uids = append(uids, 0)
	}
	cur, err := readStat(pid)
	if err != nil {
		return fmt.Errorf("process %d: %w", pid, err)
	}
	for seen := 0; cur.ppid > 1 && seen < 4096; seen++ {
		parent, err := readStat(cur.ppid)
		if err != nil {
			return fmt.Errorf("process %d: ancestor %d: %w", pid, cur.ppid, err)
		}
		if isHost(cur.ppid, parent.start, uids) {
			return &PluginError{PID: pid, Why: "is a plugin of host process " + strconv.Itoa(cur.ppid) + " or descends from one", Host: cur.ppid}
		}
		cur = parent
	}
	return nil
}
