// Package python holds the Python plugin SDK (plugkit/); this Go test runs
// its unit tests with `go test`, so that `make test` and CI run them. The
// SDK's behaviour over the wire is tested from Go: remote's
// TestConformancePython and cmd/host's TestPythonPluginsEndToEnd.
package python

import (
	"os/exec"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testenv"
)

func TestPythonUnitTests(t *testing.T) {
	testenv.NeedPython(t)
	cmd := exec.Command("/usr/bin/env", "-i", "python3", "-W", "error", "-B", "-m", "unittest", "discover", "-v", "-s", "tests", "-t", ".")
	out, err := cmd.CombinedOutput()
	t.Logf("%s", out)
	if err != nil {
		t.Fatalf("python3 -m unittest: %v", err)
	}
}
