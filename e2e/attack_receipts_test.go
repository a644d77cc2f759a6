package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// receiptsDeployment writes a deployment with receipts on: the audit
// plugin, critical, and the hostile plugin "forger", critical too, whose
// result listener answers every call with a receipt of its own. host is
// added to the host block, more after the plugins.
func receiptsDeployment(t *testing.T, dir, host, more string) string {
	t.Helper()
	src := fmt.Sprintf(`host {
  admin_socket = "run/host.sock"
  receipts     = true
%[4]s}

plugin "forger" {
  path     = %[1]q
  critical = true
  config {
    tool  = "forger"
    forge = true
  }
}

plugin "audit" {
  path     = %[2]q
  critical = true
  config {
    path  = %[3]q
    fsync = "always"
  }
}
%[5]s`, hostilePath(bins.Dir()), pluginPath("audit"), filepath.Join(dir, "audit.log"), host, more)
	config := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(config, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return config
}

// TestAttackForgedReceipt: a second critical plugin with a result listener
// sends its own receipt for every call, and answers before the audit (it
// writes nothing). The receipt handed back is the audit's, every time: the
// host takes receipts only from the plugin that declares them (or that
// receipts_from names).
func TestAttackForgedReceipt(t *testing.T) {
	needShippedDeployment(t)
	for _, tc := range []struct{ name, host string }{
		{"declared", ""},
		{"receipts_from", "  receipts_from = \"audit\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			config := receiptsDeployment(t, dir, tc.host, "")
			h := startHost(t, config, 2)
			for i := range 10 {
				r, code := callJSON(t, config, "forger", `{"what":"exec"}`)
				if code != 0 || !r.OK || r.Receipt == nil {
					t.Fatalf("call %d: exit %d %+v receipt %+v\n%s", i, code, r, r.Receipt, tail(h.stderr.String()))
				}
				if rc := r.Receipt; rc.Plugin != "audit" || rc.Hash == "forged" || len(rc.Hash) != 64 {
					t.Fatalf("call %d: the forger's receipt was handed back: %+v", i, *rc)
				}
			}
			if !strings.Contains(h.stderr.String(), "receipts dropped") {
				t.Errorf("the host did not log the dropped receipts:\n%s", tail(h.stderr.String()))
			}
			if _, stderr, code := cli(t, "stop", "-c", config); code != 0 {
				t.Errorf("host stop: exit %d: %s", code, stderr)
			}
			<-h.done
		})
	}
}

// TestAttackTwoPluginsClaimReceipts: two critical plugins that both declare
// receipts, and no receipts_from, is a configuration error at the second;
// receipts_from naming one of them resolves it, and naming a plugin that is
// not critical, or none, is an error at the attribute.
func TestAttackTwoPluginsClaimReceipts(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	second := fmt.Sprintf(`
plugin "audit2" {
  path     = %q
  critical = true
  config {
    path = %q
  }
}
`, pluginPath("audit"), filepath.Join(dir, "audit2.log"))
	config := receiptsDeployment(t, dir, "", second)
	_, stderr, code := cli(t, "validate", "-c", config)
	t.Logf("host validate: exit %d: %s", code, stderr)
	if code == 0 || !strings.Contains(stderr, "Two plugins declare receipts") || !strings.Contains(stderr, "config.hcl:") || !strings.Contains(stderr, `receipts_from = "audit"`) {
		t.Errorf("host validate with two plugins declaring receipts: exit %d", code)
	}
	config = receiptsDeployment(t, dir, "  receipts_from = \"audit2\"\n", second)
	if _, stderr, code := cli(t, "validate", "-c", config); code != 0 {
		t.Errorf("host validate with receipts_from: exit %d: %s", code, stderr)
	}
	for _, name := range []string{"nobody", "plain"} {
		config = receiptsDeployment(t, dir, fmt.Sprintf("  receipts_from = %q\n", name), fmt.Sprintf(`
plugin "plain" {
  path = %q
  config {
    tool = "plain"
  }
}
`, hostilePath(bins.Dir())))
		_, stderr, code := cli(t, "validate", "-c", config)
		t.Logf("host validate, receipts_from = %q: exit %d: %s", name, code, stderr)
		if code == 0 || !strings.Contains(stderr, "Invalid receipts_from") || !strings.Contains(stderr, "config.hcl:4") {
			t.Errorf("receipts_from = %q: exit %d, want an error at the attribute", name, code)
		}
	}
}
