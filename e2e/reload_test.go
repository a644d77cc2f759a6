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

// TestReloadDeploymentFile changes the file under a running host: an
// invalid file is refused and nothing changes; a valid one starts what was
// added, restarts what changed and stops what was removed.
func TestReloadDeploymentFile(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	for _, d := range []string{"a", "b"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, d, "which.txt"), []byte("root "+d+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	config := filepath.Join(dir, "config.hcl")
	write := func(body string) {
		t.Helper()
		if err := os.WriteFile(config, []byte("host {\n  admin_socket = \"host.sock\"\n}\n"+body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := func(root string) string {
		return fmt.Sprintf("plugin \"files\" {\n  path = %q\n  config {\n    root = %q\n  }\n}\n", pluginPath("files"), root)
	}
	safety := fmt.Sprintf("plugin \"safety\" {\n  path = %q\n  config {\n    deny \"no-which\" {\n      pattern = [\"which\"]\n    }\n  }\n}\n", pluginPath("safety"))
	status := func() map[string]admin.PluginStatus { return statusOf(t, config) }

	write(files("a"))
	startHost(t, config, 1)
	before := status()["files"]

	t.Run("an invalid file is refused and nothing changes", func(t *testing.T) {
		write(files("a") + "plugin \"broken\" {\n  path = \"nope\"\n}\n")
		written, _ := os.ReadFile(config)
		want := fmt.Sprintf("config.hcl:%d:", lineOf(t, string(written), `"nope"`))
		_, stderr, code := cli(t, "reload", "-c", config)
		if code != 1 || !strings.Contains(stderr, want) {
			t.Fatalf("reload: exit %d, want 1 with the error's line:\n%s", code, stderr)
		}
		st := status()
		if len(st) != 1 || st["files"].PID != before.PID || st["files"].State != "ACTIVE" {
			t.Fatalf("the running deployment changed: %+v", st)
		}
	})

	t.Run("added, changed and unchanged", func(t *testing.T) {
		write(files("b") + safety)
		out, stderr, code := cli(t, "reload", "-c", config)
		if code != 0 || !strings.Contains(out, "safety added") || !strings.Contains(out, "files reloaded") {
			t.Fatalf("reload: exit %d\n%s%s", code, out, stderr)
		}
		st := status()
		if st["files"].PID == before.PID || st["files"].State != "ACTIVE" || st["safety"].State != "ACTIVE" {
			t.Fatalf("after reload: %+v", st)
		}
		r, _ := callJSON(t, config, "read_file", `{"path":"which.txt"}`)
		if r.Error == nil || r.Error.Code != "DENIED" || r.DecidedBy != "safety" {
			t.Fatalf("the new rule does not apply: %+v", r)
		}
	})

	t.Run("removed", func(t *testing.T) {
		write(files("b"))
		out, stderr, code := cli(t, "reload", "-c", config)
		if code != 0 || !strings.Contains(out, "safety removed") {
			t.Fatalf("reload: exit %d\n%s%s", code, out, stderr)
		}
		r, _ := callJSON(t, config, "read_file", `{"path":"which.txt"}`)
		if !r.OK || !strings.Contains(string(r.Value), "root b") {
			t.Fatalf("read after reload: %+v %s", r, r.Value)
		}
		if _, ok := status()["safety"]; ok {
			t.Fatal("safety still listed")
		}
	})
}

// statusOf is `host status --json`, by plugin name.
func statusOf(t *testing.T, config string) map[string]admin.PluginStatus {
	t.Helper()
	out, stderr, code := cli(t, "status", "--json", "-c", config)
	if code != 0 {
		t.Fatalf("status: exit %d %s", code, stderr)
	}
	var st admin.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	m := map[string]admin.PluginStatus{}
	for _, p := range st.Plugins {
		m[p.Name] = p
	}
	return m
}
