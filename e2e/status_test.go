package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// TestStatusShowsLastExit SIGKILLs a plugin of a running host: once it is
// back, `host status` says how its last process ended.
func TestStatusShowsLastExit(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "root"), 0o755); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.hcl")
	hcl := fmt.Sprintf("host {\n  admin_socket = \"host.sock\"\n}\nplugin \"files\" {\n  path = %q\n  config {\n    root = \"root\"\n  }\n}\n", pluginPath("files"))
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	startHost(t, config, 1)

	out, _, code := cli(t, "status", "-c", config)
	if code != 0 || strings.Contains(out, "last exit") {
		t.Fatalf("status of a healthy deployment: exit %d\n%s", code, out)
	}

	pid := statusOf(t, config)["files"].PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var st admin.PluginStatus
	if !testkit.Eventually(20*time.Second, func() bool {
		st = statusOf(t, config)["files"]
		return st.State == "ACTIVE" && st.PID != 0 && st.PID != pid
	}) {
		t.Fatalf("files was not restarted: %+v", st)
	}
	want := fmt.Sprintf("process %d exited unexpectedly: killed by signal: killed", pid)
	if st.LastExit != want {
		t.Errorf("last_exit = %q, want %q", st.LastExit, want)
	}
	out, _, code = cli(t, "status", "-c", config)
	if code != 0 || !strings.Contains(out, "\nfiles: last exit: "+want+"\n") {
		t.Errorf("status: exit %d, want the last exit:\n%s", code, out)
	}
	t.Logf("host status:\n%s", out)
}
