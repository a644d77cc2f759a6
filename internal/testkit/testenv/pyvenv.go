package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// PythonPackage installs the Python SDK in sdkDir (sdk/python) as a plugin
// author outside this repository would, and returns the Python that
// imports it: a fresh virtual environment in a temporary folder that sees
// Debian's grpcio, protobuf and cryptography, and pip install of a copy of
// sdkDir with no network. It ends the test through NeedPythonPackaging
// when pip or setuptools is missing.
func PythonPackage(t testing.TB, sdkDir string) string {
	t.Helper()
	NeedPythonPackaging(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src") // pip builds in its source folder: not in the tree
	if err := os.CopyFS(src, os.DirFS(sdkDir)); err != nil {
		t.Fatal(err)
	}
	venv := filepath.Join(dir, "venv")
	py := filepath.Join(venv, "bin", "python")
	RunPython(t, dir, "python3", "-m", "venv", "--system-site-packages", "--without-pip", venv)
	RunPython(t, dir, py, "-m", "pip", "install", "--no-build-isolation", "--no-deps", "--no-index", "--disable-pip-version-check", src)
	// The package, not a folder of this repository, is what imports.
	if got := RunPython(t, dir, py, "-c", "import plugkit; print(plugkit.__file__)"); !strings.HasPrefix(got, venv+"/") {
		t.Fatalf("plugkit imports from %s, not from the virtual environment", got)
	}
	return py
}

// RunPython runs a Python command in dir with little more than the
// environment the host gives a plugin: PATH is the default one env uses
// without it (Debian's python3 in /usr/bin), which venv needs to find the
// interpreter. It returns the output, failing the test when it fails.
func RunPython(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("/usr/bin/env", append([]string{"-i", "HOME=" + dir, "PATH=/usr/bin:/bin"}, args...)...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}
