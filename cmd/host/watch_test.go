package main

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestWatchReloadsOnNewBinary replaces a watched plugin's binary under a
// running host: the plugin is restarted from the new binary.
func TestWatchReloadsOnNewBinary(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	bin, src := copyFilesPlugin(t, dir)
	config := filepath.Join(dir, "config.hcl")
	hcl := "host {\n  admin_socket = \"host.sock\"\n}\nplugin \"files\" {\n  path  = \"files\"\n  watch = true\n  config {\n    root = \"root\"\n  }\n}\n"
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	startHost(t, config, 1)
	pid := func() int {
		st := statusOf(t, config)
		if p, ok := st["files"]; ok && p.State == "ACTIVE" {
			return p.PID
		}
		return 0
	}
	before := pid()

	// A new build is written beside the old one and renamed over it.
	next := filepath.Join(dir, "files.new")
	if err := os.WriteFile(next, append(src, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(next, bin); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if p := pid(); p != 0 && p != before {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("files was not restarted from its new binary (pid still %d)", before)
}
