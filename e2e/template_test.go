package e2e

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestPluginTemplate builds and tests examples/plugin-template as a plugin
// outside this repository would be: copied to a temporary folder, a module
// of its own requiring only the SDK module (its replace pointed at this
// repository's shared/), tested with the SDK's test kit, and its binary
// run by a real host with the template's own deployment block.
func TestPluginTemplate(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	src, err := filepath.Abs("../examples/plugin-template")
	if err != nil {
		t.Fatal(err)
	}
	shared, err := filepath.Abs("../shared")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	_ = os.RemoveAll(filepath.Join(dir, "bin"))
	gomod := filepath.Join(dir, "go.mod")
	mod, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	const rel = "=> ../../shared"
	if !bytes.Contains(mod, []byte(rel)) {
		t.Fatalf("the template's go.mod has no replace %q:\n%s", rel, mod)
	}
	if err := os.WriteFile(gomod, bytes.ReplaceAll(mod, []byte(rel), []byte("=> "+shared)), 0o644); err != nil {
		t.Fatal(err)
	}

	gocmd := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		// As an outside module: its go.sum may be completed from the
		// module proxy, and no workspace file of this repository counts.
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s in the template: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	gocmd("vet", "./...")
	if out := gocmd("test", "-count=1", "-v", "./..."); !strings.Contains(out, "--- PASS: TestWordCount") || !strings.Contains(out, "--- PASS: TestConformance/Shutdown") {
		t.Fatalf("the template's tests did not run:\n%s", out)
	}
	// Only the SDK module: nothing of the host's reaches a plugin.
	for _, m := range strings.Fields(gocmd("list", "-m", "-f", "{{.Path}}", "all")) {
		if m == "github.com/plugkit-go/plugkit" {
			t.Errorf("the template's build list holds the host's module")
		}
	}
	gocmd("build", "-o", "bin/wordcount", ".")

	block, err := os.ReadFile(filepath.Join(dir, "deployment.hcl"))
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "deployment-test.hcl")
	hcl := "host {\n  admin_socket = \"run/host.sock\"\n  shutdown_timeout = \"2s\"\n}\n" + string(block)
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	run := startHost(t, config, 1)
	r, code := callJSON(t, config, "word_count", `{"text":"one two three"}`)
	if code != 0 || !r.OK || string(r.Value) != "3" {
		t.Errorf("word_count under the host = %+v (exit %d), want 3\n%s", r, code, run.stderr)
	}
	r, _ = callJSON(t, config, "word_count", `{"text":"my password"}`)
	if r.OK || r.Error == nil || r.Error.Code != "DENIED" || !strings.Contains(r.Error.Message, "forbidden word password") {
		t.Errorf("word_count of a forbidden word under the host = %+v, want DENIED", r)
	}
}
