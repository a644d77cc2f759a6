package sandbox

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// fakeCgroupFS writes a mountinfo and a /proc/self/cgroup naming mounts
// under a temporary folder, for the path logic of detectCgroups.
func fakeCgroupFS(t *testing.T, mounts []string, own string) (mountinfo, cgroup, root string) {
	t.Helper()
	root = t.TempDir()
	var lines []string
	for i, m := range mounts {
		m = strings.ReplaceAll(m, "ROOT", root)
		lines = append(lines, fmt.Sprintf("%d 1 0:%d %s", 30+i, 30+i, m))
	}
	mountinfo = filepath.Join(root, "mountinfo")
	cgroup = filepath.Join(root, "cgroup")
	if err := os.WriteFile(mountinfo, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cgroup, []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	return mountinfo, cgroup, root
}

func mkdirs(t *testing.T, dirs ...string) {
	t.Helper()
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

func TestDetectCgroupsV1(t *testing.T) {
	mi, cg, root := fakeCgroupFS(t, []string{
		"/ ROOT/fs/cgroup rw - tmpfs tmpfs rw",
		"/ ROOT/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory",
		// A container's view: the mount's root is the container's cgroup.
		"/kubepods/pod1 ROOT/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids",
		"/ ROOT/fs/cgroup/cpu rw - cgroup cgroup rw,cpu,cpuacct",
	}, "8:pids:/kubepods/pod1/c1\n4:memory:/svc/host\n2:cpu,cpuacct:/\n0::/\n")
	mkdirs(t, root+"/fs/cgroup/memory/svc/host", root+"/fs/cgroup/pids/c1")
	// A cgroup left by a host that is gone is removed; one of a running
	// process is not.
	stale := root + "/fs/cgroup/pids/c1/plugkit.999999999.files.1"
	live := root + "/fs/cgroup/pids/c1/plugkit." + strconv.Itoa(os.Getpid()) + ".files.1"
	mkdirs(t, stale, live)
	got, err := detectCgroups(mi, cg, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got.version != "v1" || got.dirs[ControllerMemory] != root+"/fs/cgroup/memory/svc/host" || got.dirs[ControllerPids] != root+"/fs/cgroup/pids/c1" {
		t.Fatalf("got %+v", got)
	}
	if _, err := os.Stat(stale); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a dead host's cgroup was left: %v", err)
	}
	if _, err := os.Stat(live); err != nil {
		t.Errorf("a running host's cgroup was removed: %v", err)
	}
}

func TestDetectCgroupsV2(t *testing.T) {
	mi, cg, root := fakeCgroupFS(t, []string{
		`/ ROOT/fs/cg\040root rw,nosuid - cgroup2 cgroup2 rw,nsdelegate`,
	}, "0::/system.slice/plugkit.service\n")
	// mountinfo escapes a space in a mount point; /proc/self/cgroup does not.
	dir := root + "/fs/cg root/system.slice/plugkit.service"
	mkdirs(t, dir)
	write := func(name, v string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("cgroup.controllers", "cpu io memory\n")
	if _, err := detectCgroups(mi, cg, os.Getpid()); err == nil || !strings.Contains(err.Error(), "no pids controller") {
		t.Fatalf("without pids: %v", err)
	}
	write("cgroup.controllers", "cpu io memory pids\n")
	write("cgroup.subtree_control", "memory pids\n")
	got, err := detectCgroups(mi, cg, os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if got.version != "v2" || got.dirs[ControllerMemory] != dir || got.dirs[ControllerPids] != dir {
		t.Fatalf("got %+v", got)
	}
	// Not enabled for children, and the host is not alone in its cgroup.
	write("cgroup.subtree_control", "")
	if err := os.Remove(filepath.Join(dir, "cgroup.subtree_control")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "cgroup.subtree_control"), 0o755); err != nil {
		t.Fatal(err) // a folder: the write that enables fails
	}
	write("cgroup.procs", "1\n"+strconv.Itoa(os.Getpid())+"\n")
	if _, err := detectCgroups(mi, cg, os.Getpid()); err == nil || !strings.Contains(err.Error(), "holds other processes") {
		t.Fatalf("a shared cgroup: %v", err)
	}
}

func TestDetectCgroupsNone(t *testing.T) {
	mi, cg, _ := fakeCgroupFS(t, []string{"/ /sys rw - sysfs sysfs rw"}, "0::/\n")
	if _, err := detectCgroups(mi, cg, os.Getpid()); err == nil || !strings.Contains(err.Error(), "no cgroup hierarchy") {
		t.Fatalf("err = %v", err)
	}
}

// needCgroups skips a test where the host cannot make cgroups: not root,
// and no cgroup v2 subtree delegated to it. As root (CI), a machine
// without them fails the test.
func needCgroups(t *testing.T, s Support) {
	t.Helper()
	if s.Cgroup != "" && s.cgroupHas(ControllerMemory) && s.cgroupHas(ControllerPids) {
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("no cgroups for plugins here (%s); they need root or a delegated cgroup v2 subtree", s.CgroupErr)
	}
	testenv.Missing(t, "cgroups with memory and pids (%s)", s.CgroupErr)
}

// runInCgroup starts the helper (testdata/cgrouphelper) doing what,
// through the launcher, in a cgroup with limits l, and returns its output
// and exit; the caller closes the cgroup.
func runInCgroup(t *testing.T, what string, l Limits, execs []string) (out string, cg *Cgroup, err error) {
	t.Helper()
	self := launcher(t)
	s := Detect(self)
	needCgroups(t, s)
	bin := filepath.Join(t.TempDir(), "cgrouphelper")
	if err := testkit.GoBuild(bin, "./testdata/cgrouphelper"); err != nil {
		t.Fatalf("build the helper: %v", err)
	}
	cg, err = NewCgroup("test-"+what, l)
	if err != nil {
		t.Fatal(err)
	}
	// The cgroup alone: RLIMIT_DATA would not stop shared memory, and
	// would stop the launcher (this test binary, with the race detector's
	// mappings) first.
	cmd, err := Command(Launch{Launcher: self, Policy: Policy{Exec: execs}, Support: s, Binary: bin, Args: []string{what}, SocketDir: t.TempDir(), Cgroup: cg, MarkDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cmd.Env = []string{}
	b, err := cmd.CombinedOutput()
	return string(b), cg, err
}

// TestCgroupHoldsSharedMemory: shared anonymous memory and memfd, which
// RLIMIT_DATA does not count, are stopped at the cgroup's limit: the
// kernel kills the process there.
func TestCgroupHoldsSharedMemory(t *testing.T) {
	out, cg, err := runInCgroup(t, "shared", Limits{Memory: 128 << 20}, nil)
	defer cg.Close()
	t.Logf("%s(%v)", out, err)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the process was not killed at its limit: %v\n%s", err, out)
	}
	if strings.Contains(out, "held 192 MiB") {
		t.Errorf("the process held more than its 128 MiB:\n%s", out)
	}
	if n := cg.OOMKills(); n != 1 {
		t.Errorf("OOMKills = %d, want 1", n)
	}
	if err := cg.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
}

// TestCgroupBoundsProcessesAndEndsThem: pids.max stops a process's starts
// at the limit, for root too (RLIMIT_NPROC does not apply to root), and
// Close kills what it left running in sessions of their own.
func TestCgroupBoundsProcessesAndEndsThem(t *testing.T) {
	out, cg, err := runInCgroup(t, "fork", Limits{Processes: 16}, []string{"/usr"})
	defer cg.Close()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	t.Logf("%s", out)
	_, list, ok := strings.Cut(strings.TrimSpace(out[strings.LastIndex(out, "started "):]), ": ")
	pids := strings.Fields(list)
	if !ok || len(pids) == 0 || len(pids) >= 16 {
		t.Fatalf("started %d processes under a limit of 16:\n%s", len(pids), out)
	}
	if err := cg.Close(); err != nil {
		t.Fatalf("close: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, p := range pids {
		pid, _ := strconv.Atoi(p)
		for syscall.Kill(pid, 0) == nil && !zombie(pid) {
			if time.Now().After(deadline) {
				t.Fatalf("process %d, started by the plugin, outlived its cgroup", pid)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	for _, d := range cg.Dirs() {
		if _, err := os.Stat(d); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("cgroup %s was not removed: %v", d, err)
		}
	}
}

// zombie: an ended process its parent (init, here) has not reaped yet.
func zombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}

// TestStaleCgroupsRemoved: an empty cgroup of a host that is gone is
// removed by the next detection; one that still holds a process is left,
// with its process (its host may be alive in another pid namespace).
func TestStaleCgroupsRemoved(t *testing.T) {
	needCgroups(t, Detect(launcher(t)))
	root, err := cgroupProbe()
	if err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	prefix := filepath.Join(root.dirs[ControllerPids], cgroupPrefix+strconv.Itoa(gone.Process.Pid))
	empty, held := prefix+".empty.1", prefix+".held.1"
	for _, d := range []string{empty, held} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	left := exec.Command("/bin/sleep", "60")
	if err := left.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		left.Process.Kill()
		left.Wait()
		os.Remove(held)
	}()
	if err := os.WriteFile(filepath.Join(held, "cgroup.procs"), []byte(strconv.Itoa(left.Process.Pid)), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := detectCgroups("/proc/self/mountinfo", "/proc/self/cgroup", os.Getpid()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(empty); !errors.Is(err, os.ErrNotExist) {
		os.Remove(empty)
		t.Errorf("the dead host's empty cgroup is still there: %v", err)
	}
	if _, err := os.Stat(held); err != nil {
		t.Errorf("a cgroup holding a process was removed: %v", err)
	}
	if err := left.Process.Signal(syscall.Signal(0)); err != nil {
		t.Errorf("the process in it was ended: %v", err)
	}
}
