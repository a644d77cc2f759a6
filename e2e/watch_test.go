package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// TestWatchReloadsOnNewBinary replaces a watched plugin's binary under a
// running host: the plugin is restarted from the new binary.
func TestWatchReloadsOnNewBinary(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	bin, src := copyFilesPlugin(t, dir)
	config := filepath.Join(dir, "config.hcl")
	// watch is off at start and turned on by a file reload: the host
	// watches what the file says now.
	hcl := "host {\n  admin_socket = \"host.sock\"\n}\nplugin \"files\" {\n  path  = \"files\"\n  watch = false\n  config {\n    root = \"root\"\n  }\n}\n"
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	startHost(t, config, 1)
	if err := os.WriteFile(config, []byte(strings.Replace(hcl, "watch = false", "watch = true", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, errOut, code := cli(t, "reload", "-c", config); code != 0 {
		t.Fatalf("host reload: exit %d\n%s%s", code, out, errOut)
	}
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
	if !testkit.Eventually(20*time.Second, func() bool { p := pid(); return p != 0 && p != before }) {
		t.Fatalf("files was not restarted from its new binary (pid still %d)", before)
	}
}
