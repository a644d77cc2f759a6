package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLockThenTamper pins a deployment with `host lock`, then changes the
// binary: validate refuses it at the sha256 line.
func TestLockThenTamper(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	bin, src := copyFilesPlugin(t, dir)
	hcl := "# pinned by host lock\nplugin \"files\" {\n  path = \"files\" # a copy\n  config {\n    root = \"root\"\n  }\n}\n"
	if err := os.WriteFile(filepath.Join(dir, "config.hcl"), []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := cliIn(t, dir, "lock")
	if code != 0 || !strings.Contains(out, "files: pinned to ") {
		t.Fatalf("lock: exit %d\n%s%s", code, out, stderr)
	}
	locked, _ := os.ReadFile(filepath.Join(dir, "config.hcl"))
	if !strings.Contains(string(locked), "sha256") || !strings.Contains(string(locked), "# a copy") {
		t.Fatalf("locked file:\n%s", locked)
	}
	if out, stderr, code := cliIn(t, dir, "validate"); code != 0 {
		t.Fatalf("validate after lock: exit %d\n%s%s", code, out, stderr)
	}
	if err := os.WriteFile(bin, append(src, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = cliIn(t, dir, "validate")
	want := fmt.Sprintf("config.hcl:%d:", lineOf(t, string(locked), "sha256"))
	if code != 1 || !strings.Contains(stderr, want) || !strings.Contains(stderr, "Checksum mismatch") {
		t.Fatalf("validate after tampering: exit %d, want %q Checksum mismatch:\n%s", code, want, stderr)
	}
}

// copyFilesPlugin copies the built files plugin into dir (with a "root"
// folder for it) and returns the copy's path and its bytes.
func copyFilesPlugin(t *testing.T, dir string) (string, []byte) {
	t.Helper()
	src, err := os.ReadFile(pluginPath("files"))
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, "files")
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	return bin, src
}

// TestLockWhileRunning: `host lock` under a running host, then `host
// reload`: pinning the binaries that run is not a change, so no plugin is
// restarted, and the pin applies from then on (a restart checks it). A
// binary replaced after it started is a new version: pinning it reloads.
func TestLockWhileRunning(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	bin, src := copyFilesPlugin(t, dir)
	config := filepath.Join(dir, "config.hcl")
	hcl := fmt.Sprintf("host {\n  admin_socket = \"host.sock\"\n}\nplugin \"files\" {\n  path = \"files\"\n  config {\n    root = \"root\"\n  }\n}\nplugin \"safety\" {\n  path = %q\n}\n", pluginPath("safety"))
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	startHost(t, config, 2)
	before := statusOf(t, config)

	if out, stderr, code := cli(t, "lock", "-c", config); code != 0 {
		t.Fatalf("lock: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code := cli(t, "reload", "-c", config)
	if code != 0 || !strings.Contains(out, "none reloaded") || !strings.Contains(out, "files, safety pinned to the binary that runs (no restart)") {
		t.Fatalf("reload after lock: exit %d\n%s%s", code, out, stderr)
	}
	for name, st := range statusOf(t, config) {
		if st.PID != before[name].PID {
			t.Errorf("%s was restarted by pinning it: pid %d → %d", name, before[name].PID, st.PID)
		}
	}

	// A new binary in place of files' (same content, a new file), and the
	// pin removed: the binary that runs is not the file any more, so the
	// change of pin reloads files.
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, src, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFileAtomic(t, config, strings.Replace(readFile(t, config), "sha256", "# sha256", 1))
	out, stderr, code = cli(t, "reload", "-c", config)
	if code != 0 || !strings.Contains(out, "files reloaded") {
		t.Fatalf("reload after a new binary: exit %d\n%s%s", code, out, stderr)
	}
	if st := statusOf(t, config)["files"]; st.PID == before["files"].PID || st.State != "ACTIVE" {
		t.Errorf("files after its binary changed: %+v", st)
	}
}
