package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// TestStuckAuditEndsOnSIGTERM: the critical audit plugin's log is locked
// by a process that is no host (so it waits for the lock, as after a
// reload), and a call's result waits there for good. SIGTERM still ends
// the host: the unload that waited on that result without bound, and
// ignored every signal, now gives up within the drain timeout.
func TestStuckAuditEndsOnSIGTERM(t *testing.T) {
	needBinaries(t)
	flock := testenv.LookPath(t, "flock")
	dir := t.TempDir()
	copyFilesPlugin(t, dir)
	logPath := filepath.Join(dir, "run", "audit", "audit.log")
	if err := os.MkdirAll(filepath.Dir(logPath), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(logPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// --no-fork: the lock's holder is the process the test kills, with
	// nothing left behind.
	holder := exec.Command(flock, "--no-fork", "-x", logPath, "sleep", "600")
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Process.Kill(); _ = holder.Wait() }()
	testkit.WaitFor(t, time.Minute, "flock to hold the audit log's lock", func() bool { return exec.Command(flock, "-n", logPath, "true").Run() != nil })
	config := filepath.Join(dir, "config.hcl")
	hcl := fmt.Sprintf(`host {
  admin_socket     = "run/host.sock"
  shutdown_timeout = "2s"
  drain_timeout    = "1s"
}
plugin "files" {
  path = "files"
  config {
    root = "root"
  }
}
plugin "audit" {
  path     = %q
  critical = true
  config {
    path = "run/audit/audit.log"
  }
}
`, pluginPath("audit"))
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 2)
	if res, code := callJSON(t, config, "list_dir", `{"path":"."}`); code != 0 || !res.OK {
		t.Fatalf("a call: exit %d %+v", code, res)
	}
	start := time.Now()
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	// A bound for the test only: before, the host never ended.
	select {
	case <-h.done:
		t.Logf("ended %v after SIGTERM: %v", time.Since(start).Round(10*time.Millisecond), h.err)
	case <-time.After(2 * time.Minute):
		t.Fatalf("the host did not end on SIGTERM with its audit result stuck:\n%s", h.stderr)
	}
}
