package main

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// TestSandboxedBridgeWithoutExecSaysSo: a sandboxed bridge whose exec list
// leaves out node cannot start the server, and the plugin's error names the
// exec list and the line to add, not only "permission denied".
func TestSandboxedBridgeWithoutExecSaysSo(t *testing.T) {
	needBinaries(t)
	server := npmServer(t, "mcp-server-filesystem")
	script, err := filepath.EvalSymlinks(server)
	if err != nil {
		t.Fatal(err)
	}
	nodePath, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node: %v", err)
	}
	if nodePath, err = filepath.EvalSymlinks(nodePath); err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs(filepath.Join("testdata", "servers", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "fs" {
  path = %q
  config {
    command = [%q, %q, %q]
    prefix  = "fs"
  }
  sandbox {
    read    = [%q, %q, "/etc/ssl"]
    network = "none"
  }
}
`, bin("plugins/mcp"), nodePath, script, dir, modules, filepath.Dir(filepath.Dir(nodePath))))
	h := startHostAnyState(t, config)
	var last string
	waitFor(t, 90*time.Second, "the bridge's start to fail", func() bool {
		for _, p := range h.status(t) {
			if p.Name == "fs" && p.LastError != "" {
				last = p.LastError
				return true
			}
		}
		return false
	}, h.log.String)
	want := fmt.Sprintf(`exec = [%q]`, nodePath)
	if !strings.Contains(last, "permission denied") || !strings.Contains(last, want) {
		t.Errorf("last error %q, want permission denied and %s", last, want)
	}
}
