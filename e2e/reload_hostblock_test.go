package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/admin"
)

// TestReloadHostBlockAndBrokenFile: a reload that finds the host block
// changed says which settings wait for a restart, in its own output and
// exit code (5), not only in the host's log; and with the deployment file
// broken, the CLI still finds the host that runs it (its admin socket is
// not the default one, so only the host registry can tell it).
func TestReloadHostBlockAndBrokenFile(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.hcl")
	plugin := fmt.Sprintf("plugin \"files\" {\n  path = %q\n  config {\n    root = %q\n  }\n}\n", pluginPath("files"), dir)
	write := func(hostBlock string) {
		t.Helper()
		if err := os.WriteFile(config, []byte(hostBlock+plugin), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("host {\n  admin_socket = \"host.sock\"\n}\n")
	startHost(t, config, 1)
	pid := statusOf(t, config)["files"].PID

	t.Run("host block changed", func(t *testing.T) {
		write("host {\n  admin_socket = \"host.sock\"\n  log_level = \"debug\"\n  drain_timeout = \"7s\"\n}\n")
		out, stderr, code := cli(t, "reload", "-c", config)
		if code != exitRestart {
			t.Fatalf("reload: exit %d, want %d\n%s%s", code, exitRestart, out, stderr)
		}
		if !strings.Contains(out, "log_level, drain_timeout: takes effect at restart") || !strings.Contains(out, "1 unchanged") {
			t.Fatalf("reload does not name the settings waiting for a restart:\n%s%s", out, stderr)
		}
		out, stderr, code = cli(t, "reload", "--json", "-c", config)
		var m admin.Message
		if code != exitRestart || json.Unmarshal([]byte(out), &m) != nil || strings.Join(m.Restart, ",") != "log_level,drain_timeout" {
			t.Fatalf("reload --json: exit %d, restart %v\n%s%s", code, m.Restart, out, stderr)
		}
		if st := statusOf(t, config)["files"]; st.PID != pid || st.State != "ACTIVE" {
			t.Fatalf("the plugin was touched: %+v", st)
		}
	})

	t.Run("broken file", func(t *testing.T) {
		// An unquoted string: the file cannot be parsed at all.
		write("host {\n  admin_socket = host.sock\n}\n")
		out, stderr, code := cli(t, "status", "-c", config)
		if code != 0 || !strings.Contains(out, "files") || !strings.Contains(stderr, "has errors") {
			t.Fatalf("status with a broken file: exit %d\n%s%s", code, out, stderr)
		}
		out, stderr, code = cli(t, "reload", "-c", config)
		if code != 1 || !strings.Contains(stderr, "config.hcl:2") {
			t.Fatalf("reload of a broken file: exit %d, want 1 naming the line\n%s%s", code, out, stderr)
		}
		if st := statusOf(t, config)["files"]; st.PID != pid || st.State != "ACTIVE" {
			t.Fatalf("the running deployment changed: %+v", st)
		}
	})
}
