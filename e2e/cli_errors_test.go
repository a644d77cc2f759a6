package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCLIErrors: what the commands say when they cannot do what was asked,
// with no host running: one plain sentence, and with --json one JSON
// document on stdout for the failure too.
func TestCLIErrors(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(config, []byte("host {\n  admin_socket = \"host.sock\"\n}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "host.sock")

	t.Run("status with no host", func(t *testing.T) {
		out, stderr, code := cli(t, "status", "-c", config)
		want := "host: no host is running at " + sock + " (start one with `host run`)\n"
		if code != 2 || out != "" || stderr != want {
			t.Errorf("exit %d, stdout %q, stderr %q; want 2 and %q", code, out, stderr, want)
		}
	})
	for _, args := range [][]string{{"reload"}, {"reload", "files"}, {"status"}, {"tools"}, {"stop"}, {"call", "search"}} {
		t.Run("--json "+strings.Join(args, " "), func(t *testing.T) {
			out, stderr, code := cli(t, append(args, "--json", "-c", config)...)
			var doc struct {
				OK       bool   `json:"ok"`
				Error    string `json:"error"`
				ExitCode int    `json:"exit_code"`
			}
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("stdout is not one JSON document (%v): %q", err, out)
			}
			if doc.OK || !strings.Contains(doc.Error, "no host is running") || doc.ExitCode != code || code == 0 {
				t.Errorf("exit %d, document %+v", code, doc)
			}
			if !strings.Contains(stderr, doc.Error) {
				t.Errorf("stderr %q does not say it too", stderr)
			}
		})
	}
	t.Run("call without a tool", func(t *testing.T) {
		_, stderr, code := cli(t, "call", "-c", config)
		if code != 2 || !strings.Contains(stderr, "which tool? usage: host call TOOL [JSON]") || strings.Contains(stderr, "accepts between") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
	t.Run("call with loose arguments", func(t *testing.T) {
		_, stderr, code := cli(t, "call", "search", "q", "x", "-c", config)
		if code != 2 || !strings.Contains(stderr, `host call search '{"key":"value"}'`) {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
	})
}
