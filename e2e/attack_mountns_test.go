package e2e

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/plugkit-go/plugkit/internal/lineage"
	"github.com/plugkit-go/plugkit/sandbox"
)

// needMountNS skips a test when the kernel gives a sandboxed plugin no
// mount namespace (the host then reports an admin_socket gap instead).
func needMountNS(t *testing.T) {
	t.Helper()
	needShippedDeployment(t)
	if s := sandbox.Detect(bins.Path("host")); !s.MountNS {
		t.Skipf("no mount namespace for sandboxed plugins here: %s", s)
	}
}

// TestAttackSandboxDialsAdminSockets has a sandboxed plugin dial its own
// host's admin socket and another running host's: neither is there in
// its mount namespace (an empty file on a read-only tmpfs covers each), so
// connect fails at the OS (EROFS, ECONNREFUSED or ENOENT: no HTTP answer,
// not even the admin API's refusal), while the host's own user is served.
func TestAttackSandboxDialsAdminSockets(t *testing.T) {
	needMountNS(t)
	otherDir := t.TempDir()
	otherConfig := hostileDeployment(t, otherDir, "", "")
	other := startHost(t, otherConfig, 2)
	defer stopRunning(t, otherConfig, other)
	dir := t.TempDir()
	config := hostileDeployment(t, dir, "", "")
	h := startHost(t, config, 2)
	defer stopRunning(t, config, h)

	for name, socket := range map[string]string{
		"own host":   filepath.Join(dir, "run", "host.sock"),
		"other host": filepath.Join(otherDir, "run", "host.sock"),
	} {
		t.Run(name, func(t *testing.T) {
			o := hostileCall(t, config, "caged", map[string]any{"what": "admin", "path": socket, "addr": "GET /v1/status"})
			t.Logf("caged: %s", o.Detail)
			if o.Done || strings.HasPrefix(o.Detail, "HTTP/") || strings.Contains(o.Detail, `"plugins"`) {
				t.Fatalf("the sandboxed plugin reached the admin socket: %s", o.Detail)
			}
			if !strings.Contains(o.Detail, "read-only file system") && !strings.Contains(o.Detail, "connection refused") && !strings.Contains(o.Detail, "no such file") {
				t.Errorf("connect did not fail at the OS: %s", o.Detail)
			}
			// The unsandboxed plugin still finds the socket, and is
			// refused by the admin API (TestAttackPluginDrivesAdmin).
			if o := hostileCall(t, config, "free", map[string]any{"what": "admin", "path": socket, "addr": "GET /v1/status"}); o.Done {
				t.Errorf("the unsandboxed plugin drove the admin API: %s", o.Detail)
			}
		})
	}
	for _, c := range []string{config, otherConfig} {
		if out, stderr, code := cli(t, "status", "-c", c); code != 0 || !strings.Contains(out, "caged") {
			t.Fatalf("host status: exit %d\n%s%s", code, out, stderr)
		}
	}
}

// TestAttackDetachedDescendant has a sandboxed plugin double-fork: a child
// in a session of its own starts a process and exits, so the process is
// re-parented away from the plugin and no ancestry leads to a host. The
// admin API's check (lineage.Check, run here on its pid) still refuses it:
// it is in the plugin's mount namespace, which it cannot leave.
func TestAttackDetachedDescendant(t *testing.T) {
	needMountNS(t)
	dir := t.TempDir()
	config := hostileDeployment(t, dir, "", "")
	h := startHost(t, config, 2)
	defer stopRunning(t, config, h)

	o := hostileCall(t, config, "caged", map[string]any{"what": "detach"})
	pid, err := strconv.Atoi(o.Detail)
	if !o.Done || err != nil {
		t.Fatalf("the plugin could not detach a process: %s", o.Detail)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	ppid := parentOf(t, pid)
	t.Logf("detached process %d, parent %d (host %d)", pid, ppid, h.cmd.Process.Pid)
	if ppid == h.cmd.Process.Pid {
		t.Fatalf("the process did not detach")
	}
	err = lineage.Check(pid)
	var pe *lineage.PluginError
	if !errors.As(err, &pe) {
		t.Fatalf("lineage.Check(detached descendant of a sandboxed plugin) = %v, want it refused", err)
	}
	t.Logf("refused: %v", err)

	// An unsandboxed plugin's detached process has no such mark: what
	// the limits say of it.
	if o := hostileCall(t, config, "free", map[string]any{"what": "detach"}); o.Done {
		if free, err := strconv.Atoi(o.Detail); err == nil {
			defer syscall.Kill(free, syscall.SIGKILL)
			t.Logf("unsandboxed plugin's detached process: lineage.Check = %v", lineage.Check(free))
		}
	}
}

// parentOf is pid's parent, from /proc/PID/stat.
func parentOf(t *testing.T, pid int) int {
	t.Helper()
	b, err := readProcStat(pid)
	if err != nil {
		t.Fatal(err)
	}
	f := strings.Fields(b[strings.LastIndexByte(b, ')')+1:])
	ppid, _ := strconv.Atoi(f[1])
	return ppid
}

func readProcStat(pid int) (string, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	return string(b), err
}
