package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAttackNestedCaseFile: `host test` parsed a case file with the HCL
// parser as it came, and a case file nested deep enough (20,000 brackets
// in an arguments value, `[*]` chained 200,000 times, 100,000 nested
// blocks inside a case) overflowed its stack: the process died with a Go
// stack trace instead of a diagnostic. It is now bounded like the
// deployment file: refused as file:line:col, nothing run, exit 2.
func TestAttackNestedCaseFile(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(config, []byte(fmt.Sprintf("plugin \"files\" {\n  path = %q\n  config {\n    root = %q\n  }\n}\n", pluginPath("files"), dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	head := "case \"deep\" {\n  tool   = \"read_file\"\n  expect = \"ALLOWED\"\n"
	for _, c := range []struct{ name, body, want string }{
		{"20000 nested brackets", head + "  arguments = { path = " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + " }\n}\n", "Nesting too deep"},
		{"200000 chained splats", head + "  arguments = { path = [1]" + strings.Repeat("[*]", 200000) + " }\n}\n", "Nesting too deep"},
		{"100000 nested blocks", head + strings.Repeat("a {\n", 100000) + strings.Repeat("}\n", 100000) + "}\n", "Nesting too deep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cases := filepath.Join(dir, "cases.hcl")
			if err := os.WriteFile(cases, []byte(c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := cli(t, "test", "-c", config, cases)
			if code != exitUsage || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "cases.hcl:") ||
				!strings.Contains(stderr, "nothing was run") || strings.Contains(stderr, "goroutine ") {
				t.Fatalf("host test: exit %d, want %d with %q naming cases.hcl:\n%s", code, exitUsage, c.want, tail(stderr))
			}
		})
	}
}
