package hclbound

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// TestCheck: each way of nesting past the limit is refused with its line;
// the same just under the limit, and a long flat list, are not.
func TestCheck(t *testing.T) {
	l := Limits{What: "keys file"}
	deep := func(n int) map[string]string {
		return map[string]string{
			"splats":  "x = [1]" + strings.Repeat("[*]", n) + "\n",
			"indexes": "x = [1]" + strings.Repeat("[0]", n) + "\n",
			"attrs":   "x = a" + strings.Repeat(".b", n) + "\n",
			"tuples":  "x = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		}
	}
	for name, src := range deep(DefaultMaxNesting + 1) {
		if d := l.Check("f.hcl", []byte("\n"+src)); !d.HasErrors() || d[0].Subject.Start.Line != 2 || !strings.Contains(d.Error(), "keys file") {
			t.Errorf("%s past the limit: %v", name, d)
		}
	}
	for name, src := range deep(DefaultMaxNesting - 1) {
		if d := l.Check("f.hcl", []byte(src)); d.HasErrors() {
			t.Errorf("%s under the limit: %v", name, d)
		}
	}
	if d := l.Check("f.hcl", []byte("x = ["+strings.Repeat("a.b[0], ", 5000)+"]\n")); d.HasErrors() {
		t.Errorf("a flat list: %v", d)
	}
	path := filepath.Join(t.TempDir(), "big.hcl")
	if err := os.WriteFile(path, []byte(strings.Repeat("#\n", DefaultMaxBytes)), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, d := l.ReadFile(path); !d.HasErrors() || d[0].Summary != "Keys file too large" {
		t.Errorf("a file over the limit: %v", d)
	}
	if _, err := ReadAtMost(path, 1024); err == nil || !strings.Contains(err.Error(), "1 KiB") {
		t.Errorf("ReadAtMost: %v", err)
	}
}

// FuzzCheck: a source Check passes is one the HCL parser reads without
// overflowing its stack (the fuzzer would crash on one that does), and
// Check itself never panics.
func FuzzCheck(f *testing.F) {
	f.Add([]byte("x = [1][*][*]\n"))
	f.Add([]byte("a {\n  b = \"${c.d[0]}\"\n}\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		if d := (Limits{}).Check("f.hcl", src); d.HasErrors() {
			return
		}
		_, _ = hclsyntax.ParseConfig(src, "f.hcl", hcl.InitialPos)
	})
}
