package lineage

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/sandbox"
)

// The test binary serves sandbox's launcher (TestMain).

// TestDetachedDescendantKeepsMark starts a sandboxed shell that detaches
// a child (setsid, then the shell exits: the child is re-parented away
// from the test): no ancestry leads to a host, yet Check refuses the
// child by its mount namespace. A process of the test's own namespace is
// not refused.
func TestDetachedDescendantKeepsMark(t *testing.T) {
	self, err := sandbox.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := sandbox.Detect(self)
	if !s.MountNS {
		t.Skipf("kernel: %s", s)
	}
	t.Setenv("TMPDIR", t.TempDir()) // a registry of this test's own
	mark, err := MarkDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd, err := sandbox.Command(sandbox.Launch{
		Launcher: self, Support: s, MarkDir: mark, SocketDir: t.TempDir(),
		Policy: sandbox.Policy{Exec: []string{"/bin", "/usr/bin"}},
		Binary: "/bin/sh",
		Args:   []string{"-c", "setsid sleep 60 </dev/null >/dev/null 2>&1 & echo $!"},
	})
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatalf("no pid: %q", out)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	// The shell has exited: wait until its child has left it.
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		st, err := readStat(pid)
		if err != nil {
			t.Fatal(err)
		}
		if st.ppid != cmd.Process.Pid || time.Now().After(deadline) {
			t.Logf("detached child %d, parent now %d", pid, st.ppid)
			break
		}
	}
	err = Check(pid)
	var pe *PluginError
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "mount namespace") {
		t.Fatalf("Check(detached child) = %v, want refused for its mount namespace", err)
	}
	t.Log(err)

	plain := exec.Command("sleep", "60")
	if err := plain.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { plain.Process.Kill(); plain.Wait() }()
	if err := Check(plain.Process.Pid); err != nil {
		t.Errorf("Check(a process of the test's own) = %v", err)
	}
	if err := Check(os.Getpid()); err != nil {
		t.Errorf("Check(self) = %v", err)
	}
}

// TestSocketsOfLiveHosts: a host's record names its admin socket, which
// Sockets returns while it runs; a record left by a process that is gone
// is skipped.
func TestSocketsOfLiveHosts(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir())
	unregister, err := Register("/run/me/host.sock")
	if err != nil {
		t.Fatal(err)
	}
	dir := RegistryDir(os.Geteuid())
	// A stale record: a pid that is not running with that start time.
	if err := os.WriteFile(dir+"/"+strconv.Itoa(1<<22-1), []byte("1\n/run/gone.sock\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got := Sockets()
	if len(got) != 1 || got[0] != "/run/me/host.sock" {
		t.Errorf("Sockets() = %q", got)
	}
	unregister()
	if got := Sockets(); len(got) != 0 {
		t.Errorf("after unregister: %q", got)
	}
}
