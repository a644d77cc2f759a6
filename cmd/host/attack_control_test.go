package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostilePath is where TestMain builds internal/hostileplugin.
func hostilePath(dir string) string { return filepath.Join(dir, "plugins", "hostile") }

// hostileOutcome is what the hostile plugin's tool answers.
type hostileOutcome struct {
	Done   bool   `json:"done"`
	Detail string `json:"detail"`
}

// hostileDeployment writes a deployment of two hostile plugins into dir:
// "caged", sandboxed (network none, nothing of the file system declared),
// and "free", not sandboxed; each serves a tool of its own name. extra is
// added to the host block, more after the plugins.
func hostileDeployment(t *testing.T, dir, extra, more string) string {
	t.Helper()
	hcl := fmt.Sprintf(`
host {
  admin_socket     = "run/host.sock"
  approval_timeout = "10s"
%[2]s}

plugin "caged" {
  path = %[1]q
  config {
    tool = "caged"
  }
  sandbox {
    network = "none"
  }
}

plugin "free" {
  path = %[1]q
  config {
    tool = "free"
  }
}
%[3]s`, hostilePath(bins.dir), extra, more)
	path := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(path, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hostileCall has the hostile plugin behind tool try args.
func hostileCall(t *testing.T, config, tool string, args map[string]any) hostileOutcome {
	t.Helper()
	b, _ := json.Marshal(args)
	r, code := callJSON(t, config, tool, string(b))
	if code != 0 || !r.OK {
		t.Fatalf("host call %s %s: exit %d %+v", tool, b, code, r)
	}
	var o hostileOutcome
	if err := json.Unmarshal(r.Value, &o); err != nil {
		t.Fatalf("%s: %s: %v", tool, r.Value, err)
	}
	return o
}

// TestAttackInheritedDescriptors starts the host as `host run 7<secret
// 8>>log` would: neither plugin, sandboxed or not, can read the secret
// through descriptor 7 or write the log through descriptor 8, and none of
// its descriptors is either file.
func TestAttackInheritedDescriptors(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	config := hostileDeployment(t, dir, "", "")
	secretPath := filepath.Join(dir, "secret.txt")
	logPath := filepath.Join(dir, "operator.log")
	const secret = "the operator's secret"
	if err := os.WriteFile(secretPath, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile, err := os.Open(secretPath)
	if err != nil {
		t.Fatal(err)
	}
	defer secretFile.Close()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bins.host, "run", "-c", config)
	// ExtraFiles[i] is descriptor 3+i: 7 and 8, as a shell's 7< and 8>>.
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, secretFile, logFile}
	h := startHostCmd(t, cmd, config, 2)
	defer stopRunning(t, config, h)

	for _, tool := range []string{"caged", "free"} {
		t.Run(tool, func(t *testing.T) {
			if o := hostileCall(t, config, tool, map[string]any{"what": "readfd", "count": 7}); o.Done || strings.Contains(o.Detail, secret) {
				t.Errorf("the plugin read the host's descriptor 7: %+v", o)
			} else {
				t.Logf("read descriptor 7: %s", o.Detail)
			}
			if o := hostileCall(t, config, tool, map[string]any{"what": "writefd", "count": 8}); o.Done {
				t.Errorf("the plugin wrote the host's descriptor 8: %+v", o)
			} else {
				t.Logf("write descriptor 8: %s", o.Detail)
			}
			o := hostileCall(t, config, tool, map[string]any{"what": "fds"})
			t.Logf("its descriptors: %s", o.Detail)
			if strings.Contains(o.Detail, secretPath) || strings.Contains(o.Detail, logPath) {
				t.Errorf("the plugin holds a descriptor the host inherited: %s", o.Detail)
			}
		})
	}
	if b, _ := os.ReadFile(logPath); len(b) > 0 {
		t.Errorf("the operator's log was written: %q", b)
	}
}
