package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// TestPythonPackageInstalls installs the Python SDK as a package, as a
// plugin author outside this repository would, and runs what it makes: a
// fresh virtual environment (seeing Debian's grpcio, protobuf and
// cryptography, and nothing of this repository), pip install of a copy of
// sdk/python with no network, python3 -m plugkit.new, the skeleton's own
// test (plugkit.testing, its conformance cases among them), and the
// skeleton under a real host with the deployment block plugkit.new
// printed.
func TestPythonPackageInstalls(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	py := testenv.PythonPackage(t, "../sdk/python")
	run := func(wd string, args ...string) string {
		t.Helper()
		return testenv.RunPython(t, wd, args...)
	}
	block := run(dir, py, "-m", "plugkit.new", "greeter")
	plugin := filepath.Join(dir, "greeter", "plugin.py")
	head, err := os.ReadFile(plugin)
	if err != nil {
		t.Fatal(err)
	}
	if first, _, _ := strings.Cut(string(head), "\n"); first != "#!"+py {
		t.Errorf("the skeleton's first line is %q, want the venv's Python", first)
	}
	out := run(dir, py, "-W", "error", "-B", "-m", "unittest", "discover", "-v", "-s", "greeter", "-t", "greeter")
	if !strings.Contains(out, "test_conformance") || !strings.Contains(out, "OK") {
		t.Fatalf("the skeleton's tests did not run:\n%s", out)
	}

	config := filepath.Join(dir, "deployment.hcl")
	hcl := "host {\n  admin_socket = \"run/host.sock\"\n  shutdown_timeout = \"2s\"\n}\n" + block
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 1)
	r, code := callJSON(t, config, "greeter_echo", `{"text":"hello there"}`)
	if code != 0 || !r.OK || string(r.Value) != `"hello there"` {
		t.Errorf("greeter_echo under the host = %+v (exit %d)\n%s", r, code, h.stderr)
	}
	r, _ = callJSON(t, config, "greeter_echo", `{"text":"a secret"}`)
	if r.OK || r.Error == nil || r.Error.Code != "DENIED" || !strings.Contains(r.Error.Message, "forbidden word secret") {
		t.Errorf("greeter_echo of a forbidden word under the host = %+v, want DENIED", r)
	}
}
