package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestMakefileBuildsEveryPlugin: `make plugins` builds each main package
// directly under plugins/, a new one included, with no edit to the
// Makefile; a library folder beside them is not a plugin.
func TestMakefileBuildsEveryPlugin(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make is needed to build the project: %v", err)
	}
	mk, err := os.ReadFile("../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"Makefile":                 string(mk),
		"go.mod":                   "module example.com/hello\n\ngo 1.24\n",
		"plugins/hello/main.go":    "package main\n\nfunc main() {}\n",
		"plugins/goodbye/main.go":  "package main\n\nfunc main() {}\n",
		"plugins/shared/shared.go": "package shared\n",
		"plugins/notes/README.md":  "not Go\n",
	}
	for name, body := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("make", "plugins")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("make plugins: %v\n%s", err, out)
	}
	built, _ := os.ReadDir(filepath.Join(dir, "bin", "plugins"))
	var names []string
	for _, e := range built {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "goodbye hello" {
		t.Errorf("built %q, want the two main packages (goodbye hello)\n%s", got, out)
	}
}
