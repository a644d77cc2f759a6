package deployment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLockPinsBinariesKeepingTheFile(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin", "ok")
	if err := os.MkdirAll(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("#!/bin/sh\necho ok\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	want, err := fileSHA256(bin)
	if err != nil {
		t.Fatal(err)
	}
	src := `# The deployment.
host {
  log_level = "info" # chatty enough
}

# The index.
plugin "index" {
  path = "bin/ok" # built by make
  config {
    root = "corpus"
  }
}

plugin "other" {
  path   = "bin/ok"
  sha256 = "` + strings.Repeat("0", 64) + `"
}
`
	path := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(path, []byte(src), 0o640); err != nil {
		t.Fatal(err)
	}
	pins, diags := Lock(path)
	if diags.HasErrors() {
		t.Fatal(Format(diags))
	}
	if len(pins) != 2 || pins[0].SHA256 != want || pins[0].Old != "" || pins[1].Old != strings.Repeat("0", 64) {
		t.Fatalf("pins = %+v", pins)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, keep := range []string{"# The deployment.", "# chatty enough", "# The index.", "# built by make", `root = "corpus"`} {
		if !strings.Contains(string(got), keep) {
			t.Errorf("lost %q:\n%s", keep, got)
		}
	}
	if strings.Count(string(got), want) != 2 || strings.Contains(string(got), strings.Repeat("0", 64)) {
		t.Errorf("checksums not pinned:\n%s", got)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", fi.Mode().Perm())
	}
	d, diags := Parse(path)
	if diags.HasErrors() {
		t.Fatalf("locked file does not parse: %s", Format(diags))
	}
	if d.Plugins[0].SHA256 != want {
		t.Errorf("parsed sha256 %q", d.Plugins[0].SHA256)
	}
}

func TestLockRefusesWithoutTouchingTheFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config.hcl")
	src := "plugin \"gone\" {\n  path = \"bin/nope\"\n}\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, diags := Lock(path)
	if !diags.HasErrors() || !strings.Contains(Format(diags), "config.hcl:1:") {
		t.Fatalf("want an error at the block; got %s", Format(diags))
	}
	if got, _ := os.ReadFile(path); string(got) != src {
		t.Errorf("file changed:\n%s", got)
	}
}
