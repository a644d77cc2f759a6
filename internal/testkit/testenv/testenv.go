// Package testenv decides what a test does when it needs a program from
// outside Go (node and npm packages, promtool, python3): on a developer's
// machine that lacks it the test is skipped, saying what to install; in CI,
// where .ci/run installs it and sets PLUGKIT_CI=1, the same absence fails the
// test, so a missing dependency can never turn into a silent skip there.
package testenv

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"testing"
)

// InCI reports whether the tests run under .ci/run.
func InCI() bool { return os.Getenv("PLUGKIT_CI") == "1" }

// Missing ends the test because something it needs is not there: a failure
// in CI, a skip elsewhere.
func Missing(t testing.TB, format string, args ...any) {
	t.Helper()
	if InCI() {
		t.Fatalf("required by this test in CI: "+format, args...)
	}
	t.Skipf("skipped, not installed here: "+format, args...)
}

// LookPath returns the path of the named program, or ends the test through
// Missing.
func LookPath(t testing.TB, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		Missing(t, "%s (%v)", name, err)
	}
	return p
}

// NeedPython ends the test through Missing unless Python 3 with grpcio,
// protobuf and cryptography is there as a Python plugin finds it: its "#!/usr/bin/env
// python3" line, in the environment the host gives a plugin (no PATH, so
// env looks in /bin and /usr/bin).
func NeedPython(t testing.TB) {
	t.Helper()
	pythonOnce.Do(func() {
		cmd := exec.Command("/usr/bin/env", "-i", "python3", "-c", "import grpc, google.protobuf, cryptography")
		if out, err := cmd.CombinedOutput(); err != nil {
			pythonErr = fmt.Errorf("python3 with grpcio, protobuf and cryptography (Debian: python3-grpcio python3-protobuf python3-cryptography): %v: %s", err, bytes.TrimSpace(out))
		}
	})
	if pythonErr != nil {
		Missing(t, "%v", pythonErr)
	}
}

var (
	pythonOnce sync.Once
	pythonErr  error
)

// NeedPythonPackaging is NeedPython for a test that installs the Python
// SDK as a package: also pip and setuptools, and the venv module (Debian:
// python3-pip python3-setuptools; venv is in Python's standard library,
// used without its ensurepip).
func NeedPythonPackaging(t testing.TB) {
	t.Helper()
	NeedPython(t)
	cmd := exec.Command("/usr/bin/env", "-i", "python3", "-c", "import setuptools, pip, venv")
	if out, err := cmd.CombinedOutput(); err != nil {
		Missing(t, "python3 with pip and setuptools (Debian: python3-pip python3-setuptools): %v: %s", err, bytes.TrimSpace(out))
	}
}
