package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestHealthyRunLogsNoError: starting a deployment, reloading it whole and
// one plugin at a time, and stopping it logs no ERROR line: an error in a
// healthy run teaches operators to ignore errors.
func TestHealthyRunLogsNoError(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	config := writeFilesAudit(t, dir, "audit.log", fmt.Sprintf(`plugin "safety" {
  path     = %q
  critical = true
}
`, pluginPath("safety")))
	for round := range 3 {
		h := startHost(t, config, 3)
		for _, args := range [][]string{{"reload"}, {"reload", "files"}, {"reload", "safety"}, {"reload", "audit"}} {
			if _, stderr, code := cli(t, append(args, "-c", config)...); code != 0 {
				t.Fatalf("%s: exit %d %s", args, code, stderr)
			}
		}
		if r, code := callJSON(t, config, "list_dir", `{"path":"."}`); code != 0 || !r.OK {
			t.Fatalf("list_dir: exit %d %+v", code, r)
		}
		if _, stderr, code := cli(t, "stop", "-c", config); code != 0 {
			t.Fatalf("stop: exit %d %s", code, stderr)
		}
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			t.Fatal("host run did not stop")
		}
		for _, line := range strings.Split(h.stderr.String(), "\n") {
			if strings.Contains(line, "[ERROR]") {
				t.Errorf("round %d: an error in a healthy run: %s", round+1, line)
			}
			// go-plugin's line for each process's end, naming the
			// launcher as the plugin: the host says what matters itself.
			if strings.Contains(line, "plugin process exited") && !strings.Contains(line, "[DEBUG]") {
				t.Errorf("round %d: go-plugin's exit line above DEBUG: %s", round+1, line)
			}
		}
	}
}

// TestGroupSIGTERMStopsInOrder: a SIGTERM to the host's whole process group
// (what systemd's default KillMode and timeout(1) send) does not end the
// plugins under the host: the host stops them itself, in order, so the
// audit log has every call and nothing is reported as a crash.
func TestGroupSIGTERMStopsInOrder(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	auditLog := filepath.Join(dir, "audit.log")
	config := writeFilesAudit(t, dir, auditLog)
	h := startHost(t, config, 2)
	const calls = 20
	for range calls {
		if r, code := callJSON(t, config, "list_dir", `{"path":"."}`); code != 0 || !r.OK {
			t.Fatalf("list_dir: exit %d %+v", code, r)
		}
	}
	if err := syscall.Kill(-h.cmd.Process.Pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		t.Fatal("host run did not stop")
	}
	if h.err != nil {
		t.Errorf("host run: %v", h.err)
	}
	for _, line := range strings.Split(h.stderr.String(), "\n") {
		if strings.Contains(line, "[ERROR]") {
			t.Errorf("an error on a group SIGTERM: %s", line)
		}
	}
	raw, err := os.ReadFile(auditLog)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(raw), `"list_dir"`); n != calls {
		t.Fatalf("the audit log has %d list_dir calls, want %d:\n%s", n, calls, raw)
	}
}

// writeFilesAudit writes, in dir, a deployment of the files plugin over dir,
// the plugin blocks between, and a critical audit log at auditLog, and
// returns its path.
func writeFilesAudit(t *testing.T, dir, auditLog string, between ...string) string {
	t.Helper()
	config := filepath.Join(dir, "config.hcl")
	src := fmt.Sprintf(`host {
  admin_socket = "host.sock"
}
plugin "files" {
  path = %q
  config {
    root = %q
  }
}
%splugin "audit" {
  path     = %q
  critical = true
  config {
    path = %q
  }
}
`, pluginPath("files"), dir, strings.Join(between, ""), pluginPath("audit"), auditLog)
	if err := os.WriteFile(config, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return config
}
