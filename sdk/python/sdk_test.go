// Package python holds the Python plugin SDK (plugkit/); this Go test runs
// its unit tests with `go test`, so that `make test` and CI run them. The
// SDK's behaviour over the wire is tested from Go: remote's
// TestConformancePython and e2e's TestPythonPluginsEndToEnd.
package python

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

func TestPythonUnitTests(t *testing.T) {
	testenv.NeedPython(t)
	unittest(t, ".", "tests")
}

// TestPythonExamplePlugin runs plugins/python-example's own test, written
// with plugkit.testing (docs/writing-a-python-plugin.md quotes it). The
// plugin finds the SDK through the plugkit link beside it.
func TestPythonExamplePlugin(t *testing.T) {
	testenv.NeedPython(t)
	unittest(t, filepath.Join("..", "..", "plugins", "python-example"), ".")
}

// unittest runs python3 -m unittest discover on folder tests, from dir,
// with warnings as errors and no bytecode written into the tree.
func unittest(t *testing.T, dir, tests string) {
	t.Helper()
	cmd := exec.Command("/usr/bin/env", "-i", "python3", "-W", "error", "-B", "-m", "unittest", "discover", "-v", "-s", tests, "-t", ".")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python3 -m unittest in %s: %v", dir, err)
	}
	if !strings.Contains(string(out), "\nOK") {
		t.Fatalf("python3 -m unittest in %s ran nothing", dir)
	}
}
