package deployment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/sandbox"
)

// TestCheckSandboxesKernel: on a kernel that cannot enforce a sandbox, a
// plugin that requires it is an error at its sandbox block; one that does
// not is a warning; a kernel that can enforce everything says nothing.
func TestCheckSandboxesKernel(t *testing.T) {
	dir := t.TempDir()
	writeBinaries(t, dir)
	file := filepath.Join(dir, "d.hcl")
	src := `plugin "strict" {
  path = "bin/ok"
  sandbox {
    required = true
  }
}

plugin "lenient" {
  path = "bin/ok"
  sandbox {}
}

plugin "free" {
  path = "bin/ok"
}

plugin "lenient2" {
  path = "bin/ok"
  sandbox {}
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	d, diags := Parse(file)
	if diags.HasErrors() {
		t.Fatal(Format(diags))
	}
	weak := sandbox.Support{LandlockErr: "not enabled at boot", NetNSErr: "operation not permitted", MountNSErr: "operation not permitted"}
	got := Format(CheckSandboxes(d, weak, 1000))
	for _, want := range []string{
		`d.hcl:3:3: Sandbox cannot be enforced: Plugin "strict" requires its sandbox, but this machine cannot enforce all of it: filesystem: Landlock is not available (not enabled at boot); network: no network namespace (operation not permitted); admin_socket: no mount namespace (operation not permitted): the admin sockets are reachable by path, refused by the admin API's lineage check only; ipc:`,
		// One warning for the plugins with the same gaps.
		`d.hcl:10:3: warning: Sandbox only partly enforced: Plugins "lenient", "lenient2" run with a weaker sandbox than declared: filesystem: Landlock is not available`,
	} {
		if !strings.Contains(got, filepath.Base(file)) || !strings.Contains(strings.ReplaceAll(got, file, "d.hcl"), want) {
			t.Errorf("diagnostics lack\n%s\ngot:\n%s", want, got)
		}
	}
	if strings.Contains(got, `"free"`) {
		t.Errorf("a plugin without a sandbox was checked:\n%s", got)
	}
	diags = CheckSandboxes(d, weak, 1000)
	if n := len(diags.Errs()); n != 1 {
		t.Errorf("%d errors, want 1 (the required sandbox)", n)
	}
	if n := len(diags) - len(diags.Errs()); n != 1 {
		t.Errorf("%d warnings, want 1 for both lenient plugins:\n%s", n, Format(diags))
	}
	full := sandbox.Support{LandlockABI: 7, NetNS: true, MountNS: true}
	if diags := CheckSandboxes(d, full, 1000); len(diags) != 0 {
		t.Errorf("a kernel with everything: %s", Format(diags))
	}
}

// TestCheckSandboxesGuardsKeys: a sandbox that may write the folder of the
// MCP API keys file (it could add a key of its own) is refused, as for the
// admin socket's folder.
func TestCheckSandboxesGuardsKeys(t *testing.T) {
	dir := t.TempDir()
	writeBinaries(t, dir)
	if err := os.MkdirAll(filepath.Join(dir, "secrets"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "secrets", "keys.hcl"), []byte(""), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "d.hcl")
	src := `host {
  admin_socket = "run/host.sock"
  mcp          = "127.0.0.1:8765"
  mcp_auth {
    keys = "secrets/keys.hcl"
  }
}

plugin "writer" {
  path = "bin/ok"
  sandbox {
    write = ["secrets"]
  }
}
`
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	d, diags := Parse(file)
	if diags.HasErrors() {
		t.Fatal(Format(diags))
	}
	got := Format(CheckSandboxes(d, sandbox.Support{LandlockABI: 7, NetNS: true, MountNS: true}, 1000))
	if !strings.Contains(got, `Sandbox can write the host's control plane: Plugin "writer" may write `+filepath.Join(dir, "secrets")+`, which holds the MCP API keys file`) {
		t.Errorf("a sandbox that can write the keys file's folder:\n%s", got)
	}
}
