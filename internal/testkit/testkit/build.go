package testkit

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Binaries are Go programs built once per test process into a temporary
// folder: the tests of a package share one build of the host and of each
// plugin instead of running `go build` per test. Declare one at package
// level, build it in TestMain (Prepare) or on first use (Need), and remove
// the folder after m.Run (Remove).
type Binaries struct {
	// Prefix names the temporary folder ("plugkit-e2e-").
	Prefix string
	// Targets maps a binary's path under the folder ("host",
	// "plugins/files") to the package it is built from, an import path
	// or a path relative to the test's folder.
	Targets map[string]string

	once sync.Once
	dir  string
	err  error

	mu    sync.Mutex
	extra map[string]*extraBuild
}

type extraBuild struct {
	once sync.Once
	err  error
}

// Prepare builds the targets, once; later calls return the first error.
func (b *Binaries) Prepare() error {
	b.once.Do(func() {
		b.dir, b.err = os.MkdirTemp("", b.Prefix)
		if b.err != nil {
			b.err = fmt.Errorf("a folder for the test binaries: %w", b.err)
			return
		}
		for out, pkg := range b.Targets {
			if b.err = GoBuild(filepath.Join(b.dir, out), pkg); b.err != nil {
				return
			}
		}
	})
	return b.err
}

// Need builds the targets on first use and fails t when they did not build.
func (b *Binaries) Need(t testing.TB) {
	t.Helper()
	if err := b.Prepare(); err != nil {
		t.Fatalf("building the binaries: %v", err)
	}
}

// Dir is the folder of the binaries (empty before Prepare).
func (b *Binaries) Dir() string { return b.dir }

// Path is the path of the binary named name under the folder.
func (b *Binaries) Path(name string) string { return filepath.Join(b.dir, name) }

// Build builds pkg with go build's flags into name under the folder, once
// per name, after the targets, and returns its path; it fails t when
// either does not build. It is for binaries only some tests need.
func (b *Binaries) Build(t testing.TB, name, pkg string, flags ...string) string {
	t.Helper()
	b.Need(t)
	b.mu.Lock()
	if b.extra == nil {
		b.extra = map[string]*extraBuild{}
	}
	e := b.extra[name]
	if e == nil {
		e = &extraBuild{}
		b.extra[name] = e
	}
	b.mu.Unlock()
	out := b.Path(name)
	e.once.Do(func() { e.err = GoBuild(out, pkg, flags...) })
	if e.err != nil {
		t.Fatal(e.err)
	}
	return out
}

// Remove deletes the folder and every binary in it.
func (b *Binaries) Remove() {
	if b.dir != "" {
		os.RemoveAll(b.dir)
	}
}

// GoBuild builds the main package pkg into out with go build's flags
// before the package; the error carries the compiler's output.
func GoBuild(out, pkg string, flags ...string) error {
	gobin := "go"
	if p, err := exec.LookPath("go"); err == nil {
		gobin = p
	} else if root := os.Getenv("GOROOT"); root != "" {
		// A test run by `go test` has GOROOT set even when go is not on
		// the PATH.
		gobin = filepath.Join(root, "bin", "go")
	}
	cmd := exec.Command(gobin, append(append([]string{"build", "-o", out}, flags...), pkg)...)
	var output bytes.Buffer
	cmd.Stdout, cmd.Stderr = &output, &output
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("go build %s: %w\n%s", pkg, err, output.String())
	}
	return nil
}
