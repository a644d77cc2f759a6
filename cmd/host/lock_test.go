package main

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
