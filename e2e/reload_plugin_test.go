package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReloadOnePlugin: `host reload NAME` re-reads the file. A broken
// block is refused like `host reload` refuses it, naming its line, and the
// plugin keeps running; a changed block is applied to that plugin only, and
// the answer names the other changes it left for `host reload`; an
// unchanged block restarts the process and says so.
func TestReloadOnePlugin(t *testing.T) {
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
	write := func(filesBlock, extra string) {
		t.Helper()
		src := "host {\n  admin_socket = \"host.sock\"\n}\n" + filesBlock + extra
		if err := os.WriteFile(config, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	files := func(root string) string {
		return fmt.Sprintf("plugin \"files\" {\n  path = %q\n  config {\n    root = %q\n  }\n}\n", pluginPath("files"), root)
	}
	read := func() string {
		r, _ := callJSON(t, config, "read_file", `{"path":"which.txt"}`)
		return string(r.Value)
	}
	write(files("a"), "")
	startHost(t, config, 1)
	pid := statusOf(t, config)["files"].PID

	t.Run("a broken block is refused", func(t *testing.T) {
		write(fmt.Sprintf("plugin \"files\" {\n  path = %q\n  critcal = true\n}\n", pluginPath("files")), "")
		out, stderr, code := cli(t, "reload", "files", "-c", config)
		if code != 1 || !strings.Contains(stderr, "config.hcl:6:") || !strings.Contains(stderr, "critcal") || strings.Contains(out, "reloaded") {
			t.Fatalf("reload files: exit %d\n%s%s", code, out, stderr)
		}
		if st := statusOf(t, config)["files"]; st.PID != pid || st.State != "ACTIVE" || !strings.Contains(read(), "root a") {
			t.Fatalf("files changed: %+v", st)
		}
	})
	t.Run("a changed block is applied, other changes are named", func(t *testing.T) {
		write(files("b"), fmt.Sprintf("plugin \"safety\" {\n  path = %q\n}\n", pluginPath("safety")))
		out, stderr, code := cli(t, "reload", "files", "-c", config)
		if code != 0 || !strings.Contains(out, "reloaded files with its new block") || !strings.Contains(out, "not applied: changes to safety") {
			t.Fatalf("reload files: exit %d\n%s%s", code, out, stderr)
		}
		if !strings.Contains(read(), "root b") {
			t.Fatalf("files does not run its new block: %s", read())
		}
		if _, ok := statusOf(t, config)["safety"]; ok {
			t.Fatal("reload files started safety")
		}
	})
	t.Run("an unchanged block restarts the process", func(t *testing.T) {
		write(files("b"), "")
		before := statusOf(t, config)["files"].PID
		out, stderr, code := cli(t, "reload", "files", "-c", config)
		if code != 0 || !strings.Contains(out, "reloaded files (its block in") || strings.Contains(out, "not applied") {
			t.Fatalf("reload files: exit %d\n%s%s", code, out, stderr)
		}
		if st := statusOf(t, config)["files"]; st.PID == before || !strings.Contains(read(), "root b") {
			t.Fatalf("files after reload: %+v %s", st, read())
		}
	})
	t.Run("a plugin not in the deployment", func(t *testing.T) {
		_, stderr, code := cli(t, "reload", "nope", "-c", config)
		if code != 1 || !strings.Contains(stderr, `No plugin named "nope"`) {
			t.Fatalf("reload nope: exit %d %s", code, stderr)
		}
	})
}
