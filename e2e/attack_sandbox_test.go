package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/sandbox"
)

// TestAttackSwapWriteFolderCrashRestart: plugin "swapper" may write sbx/,
// plugin "victim" sbx/w. The swapper replaces sbx/w with a symbolic link to
// the host's run/ folder and the victim crashes: its restart is refused,
// with the reason in `host status`, and the host's commands keep working
// (run/ and its pid file untouched).
func TestAttackSwapWriteFolderCrashRestart(t *testing.T) {
	needShippedDeployment(t)
	if s := sandbox.Detect(bins.Path("host")); s.LandlockABI < 1 {
		t.Skipf("no Landlock here: %s", s)
	}
	dir := t.TempDir()
	config := hostileDeployment(t, dir, "", fmt.Sprintf(`
plugin "swapper" {
  path = %[1]q
  config {
    tool = "swapper"
  }
  sandbox {
    write = ["sbx"]
  }
}

plugin "victim" {
  path = %[1]q
  config {
    tool = "victim"
  }
  sandbox {
    write = ["sbx/w"]
  }
}
`, hostilePath(bins.Dir())))
	h := startHost(t, config, 4)
	run, w := filepath.Join(dir, "run"), filepath.Join(dir, "sbx", "w")
	pidFile := filepath.Join(run, "host.sock.pid")
	pidBefore, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	if o := hostileCall(t, config, "swapper", map[string]any{"what": "swap", "path": w, "addr": run}); !o.Done {
		t.Fatalf("the swapper could not swap %s for a link: %s", w, o.Detail)
	}
	victim := pluginStatus(t, config, "victim")
	if victim.PID <= 0 {
		t.Fatalf("victim has no process: %+v", victim)
	}
	if err := syscall.Kill(victim.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	// The restart is refused, and says why.
	var st admin.PluginStatus
	if !testkit.Eventually(60*time.Second, func() bool {
		st = pluginStatus(t, config, "victim")
		if st.State == "ACTIVE" && st.PID != victim.PID {
			// Restarted with write access to run/: show what it can do.
			o := hostileCall(t, config, "victim", map[string]any{"what": "write", "path": filepath.Join(w, "host.sock.pid")})
			t.Fatalf("victim restarted with its write folder linked to run/ (writing the host's pid file through it: %+v)", o)
		}
		return strings.Contains(st.LastError, "the admin socket's folder")
	}) {
		t.Fatalf("victim's restart was not refused with a reason: %+v\n%s", st, tail(h.stderr.String()))
	}
	t.Logf("victim: %s, last error: %s", st.State, st.LastError)
	if !strings.Contains(st.LastError, "now resolves to "+run) {
		t.Errorf("last error does not say where the path leads: %s", st.LastError)
	}
	// `host reload victim` checks again, and is refused the same way.
	out, stderr, code := cli(t, "reload", "victim", "-c", config)
	t.Logf("host reload victim: exit %d: %s%s", code, out, stderr)
	if code == 0 || !strings.Contains(out+stderr, "the admin socket's folder") {
		t.Errorf("host reload victim: exit %d, want a refusal naming the admin socket's folder", code)
	}
	if st := pluginStatus(t, config, "victim"); st.State == "ACTIVE" {
		t.Errorf("victim ACTIVE after the refused reload: %+v", st)
	}
	out, stderr, code = cli(t, "status", "-c", config)
	if code != 0 || !strings.Contains(out, "the admin socket's folder") {
		t.Errorf("host status: exit %d, no reason shown:\n%s%s", code, out, stderr)
	}
	if o := hostileCall(t, config, "caged", map[string]any{"what": "exec"}); o.Detail == "" {
		t.Errorf("a call after the refused restart: %+v", o)
	}
	if after, err := os.ReadFile(pidFile); err != nil || string(after) != string(pidBefore) {
		t.Errorf("the host's pid file changed: %q, was %q (%v)", after, pidBefore, err)
	}
	if _, stderr, code := cli(t, "stop", "-c", config); code != 0 {
		t.Errorf("host stop: exit %d: %s", code, stderr)
	}
	<-h.done
}

// pluginStatus is one plugin's line of `host status --json`.
func pluginStatus(t *testing.T, config, name string) admin.PluginStatus {
	t.Helper()
	out, stderr, code := cli(t, "status", "--json", "-c", config)
	if code != 0 {
		t.Fatalf("host status: exit %d: %s", code, stderr)
	}
	var st admin.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("host status --json: %v: %s", err, out)
	}
	for _, p := range st.Plugins {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no plugin %q in host status", name)
	return admin.PluginStatus{}
}
