package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// TestImage builds the image from this repository and reads it back with
// go-containerregistry: no base image (one layer), the entrypoint runs the
// sample deployment as the manifests' non-root user, the host, every plugin
// and the sample's files are there, and every binary is static (no
// interpreter, no shared library); then it runs it (runImage).
func TestImage(t *testing.T) {
	out := filepath.Join(t.TempDir(), "image.tar")
	if err := build(filepath.Join("..", ".."), out, "plugkit:test"); err != nil {
		t.Fatal(err)
	}
	img, err := tarball.ImageFromPath(out, nil)
	if err != nil {
		t.Fatalf("reading %s back: %v", out, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		t.Fatal(err)
	}
	if got := cf.Config.Entrypoint; !slices.Equal(got, []string{"/plugkit/bin/host"}) {
		t.Errorf("entrypoint %q", got)
	}
	if got := cf.Config.Cmd; !slices.Equal(got, []string{"run", "-c", "/plugkit/config.hcl"}) {
		t.Errorf("cmd %q", got)
	}
	if cf.Config.User != "65532:65532" || cf.Config.WorkingDir != "/plugkit" || cf.OS != "linux" {
		t.Errorf("user %q, working dir %q, os %q", cf.Config.User, cf.Config.WorkingDir, cf.OS)
	}
	layers, err := img.Layers()
	if err != nil {
		t.Fatal(err)
	}
	if len(layers) != 1 {
		t.Fatalf("%d layers, want the one the build assembles", len(layers))
	}
	rc, err := layers[0].Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	files := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(h.Name, "/")
		files[name] = h
		if strings.HasPrefix(name, "plugkit/bin/") && h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			checkStatic(t, name, data)
		}
	}
	plugins, err := pluginPackages(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"plugkit/bin/host", "plugkit/config.hcl", "plugkit/corpus/services.md",
		"plugkit/run/sandbox/notes.md", "plugkit/run/audit", "tmp", "etc/passwd"}
	for _, p := range plugins {
		want = append(want, "plugkit/bin/plugins/"+p)
	}
	for _, p := range []string{"audit", "safety", "files", "index", "search"} {
		if !slices.Contains(plugins, p) {
			t.Errorf("the sample's plugin %s is not built", p)
		}
	}
	for _, w := range want {
		if files[w] == nil {
			t.Errorf("%s is not in the image", w)
		}
	}
	if h := files["plugkit/run"]; h == nil || h.Uid != 65532 {
		t.Errorf("plugkit/run is not the user's: %+v", h)
	}
	t.Run("runs the sample deployment", func(t *testing.T) { runImage(t, layers[0]) })
	t.Run("runs as the Kubernetes Deployment", func(t *testing.T) { runAsPod(t, layers[0]) })
}

// checkStatic fails the test unless the ELF binary asks for no interpreter
// and no shared library.
func checkStatic(t *testing.T, name string, data []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		t.Errorf("%s: %v", name, err)
		return
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s asks for an interpreter: not static", name)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("%s needs shared libraries %v", name, libs)
	}
}
