package remote_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// TestConformancePythonPackage runs the conformance cases against the
// Python test plugin on the SDK installed as a package (pip install of
// sdk/python into a fresh virtual environment), not on the repository's
// folder: a copy of internal/testkit/pytestplugin whose #! line names that
// environment's Python, in a folder with no plugkit link beside it.
func TestConformancePythonPackage(t *testing.T) {
	py := testenv.PythonPackage(t, filepath.Join("..", "sdk", "python"))
	src, err := os.ReadFile(filepath.Join("..", "internal", "testkit", "pytestplugin", "testplugin.py"))
	if err != nil {
		t.Fatal(err)
	}
	_, body, ok := strings.Cut(string(src), "\n")
	if !ok || !strings.HasPrefix(string(src), "#!") {
		t.Fatal("internal/testkit/pytestplugin/testplugin.py has no #! line")
	}
	script := filepath.Join(t.TempDir(), "testplugin.py")
	if err := os.WriteFile(script, []byte("#!"+py+"\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	conformance.Run(t, processHarness{python: true, pythonScript: script})
}
