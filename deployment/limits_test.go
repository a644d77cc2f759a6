package deployment

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hostile returns files a parser that recursed per level would die on:
// each nests n levels in one of the ways HCL allows.
func hostile(n int) map[string]string {
	return map[string]string{
		"blocks":        strings.Repeat("a {\n", n) + strings.Repeat("}\n", n),
		"brackets":      "x = " + strings.Repeat("[", n) + strings.Repeat("]", n) + "\n",
		"parentheses":   "x = " + strings.Repeat("(", n) + "1" + strings.Repeat(")", n) + "\n",
		"calls":         "x = " + strings.Repeat("f(", n) + "1" + strings.Repeat(")", n) + "\n",
		"objects":       "x = " + strings.Repeat("{a = ", n) + "1" + strings.Repeat("}", n) + "\n",
		"templates":     "x = " + strings.Repeat(`"${`, n) + "1" + strings.Repeat(`}"`, n) + "\n",
		"negations":     "x = " + strings.Repeat("-", n) + "1\n",
		"nots":          "x = " + strings.Repeat("!", n) + "true\n",
		"conditionals":  "x = " + strings.Repeat("true ? 1 : ", n) + "2\n",
		"sums":          "x = 1" + strings.Repeat(" + 1", n) + "\n",
		"mixed":         "x = " + strings.Repeat("[-(!{a = ", n/4) + "1" + strings.Repeat("})]", n/4) + "\n",
		"splats":        "x = [1]" + strings.Repeat("[*]", n) + "\n",
		"indexes":       "x = [1]" + strings.Repeat("[0]", n) + "\n",
		"attributes":    "x = a" + strings.Repeat(".b", n) + "\n",
		"legacy_splats": "x = [1]" + strings.Repeat(".*", n) + "\n",
	}
}

// TestParseRefusesDeepNesting: a file nested deeper than MaxNesting, in any
// of the ways the parser recurses, is refused with a diagnostic naming
// where, without a stack overflow; one just under the limit still parses.
func TestParseRefusesDeepNesting(t *testing.T) {
	t.Parallel()
	for name, src := range hostile(20000) {
		t.Run(name, func(t *testing.T) {
			_, diags := Parse(writeDeployment(t, src))
			out := Format(diags)
			if !diags.HasErrors() || !strings.Contains(out, "Nesting too deep") || !strings.Contains(out, "deploy.hcl:") {
				t.Fatalf("diagnostics:\n%s\nwant a nesting error with a position", out)
			}
			if len(diags) != 1 {
				t.Errorf("%d diagnostics, want the nesting error alone:\n%s", len(diags), out)
			}
		})
	}
	t.Run("under_the_limit_parses", func(t *testing.T) {
		// 90 levels of objects inside a plugin's config: deep, but legal.
		src := `plugin "p" {
  path = "bin/ok"
  config {
    x = ` + strings.Repeat("{a = ", 90) + "1" + strings.Repeat("}", 90) + `
  }
}
`
		if _, diags := Parse(writeDeployment(t, src)); diags.HasErrors() {
			t.Fatalf("Parse:\n%s", Format(diags))
		}
	})
}

// TestParseRefusesLargeFile: the attack's file (200,000 nested blocks,
// 1.2 MB) and any file over MaxFileBytes are refused before parsing.
func TestParseRefusesLargeFile(t *testing.T) {
	t.Parallel()
	src := hostile(200000)["blocks"]
	if len(src) <= MaxFileBytes {
		t.Fatalf("the file is %d bytes, not over the limit", len(src))
	}
	path := writeDeployment(t, src)
	_, diags := Parse(path)
	if out := Format(diags); len(diags) != 1 || !strings.Contains(out, "Deployment file too large") || !strings.Contains(out, "1 MiB") {
		t.Fatalf("diagnostics:\n%s\nwant one saying the file is too large", out)
	}
	if _, diags := Lock(path); !strings.Contains(Format(diags), "Deployment file too large") {
		t.Errorf("Lock: %s", Format(diags))
	}
	if b, _ := os.ReadFile(path); string(b) != src {
		t.Error("Lock changed a file it refused")
	}
}

// TestParseRefusesLongChain: a chain of binary operators is read by the
// parser in a loop, but evaluated by recursion: a file at the size limit
// made of one such chain is refused like deep nesting, not evaluated.
func TestParseRefusesLongChain(t *testing.T) {
	t.Parallel()
	head := "plugin \"p\" {\n  path = \"bin/ok\"\n  config {\n    x = 1"
	tail := "\n  }\n}\n"
	n := (MaxFileBytes - len(head) - len(tail)) / 2
	src := head + strings.Repeat("+1", n) + tail
	_, diags := Parse(writeDeployment(t, src))
	if out := Format(diags); len(diags) != 1 || !strings.Contains(out, "Nesting too deep") || !strings.Contains(out, "deploy.hcl:4:") {
		t.Fatalf("diagnostics:\n%s\nwant one nesting error on line 4", out)
	}
	// A list of many short expressions is flat.
	src = head + "\n    y = [" + strings.Repeat("-1 + 2, ", 10000) + "]" + tail
	if _, diags := Parse(writeDeployment(t, src)); diags.HasErrors() {
		t.Fatalf("Parse:\n%s", Format(diags))
	}
}

// FuzzParse runs Parse on arbitrary files: it must return (diagnostics or a
// deployment) and never panic or overflow its stack. Parse is the first
// step of `host validate`, `host run` and every reload.
func FuzzParse(f *testing.F) {
	for _, src := range hostile(MaxNesting + 5) {
		f.Add([]byte(src))
	}
	for _, src := range hostile(MaxNesting - 5) {
		f.Add([]byte(src))
	}
	seeds, _ := filepath.Glob("testdata/*.hcl")
	for _, s := range seeds {
		b, err := os.ReadFile(s)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte("host {\n  mcp = \"127.0.0.1:1\"\n}\nplugin \"p\" {\n  path = \"bin/ok\"\n  config { a = [1, {b = \"${c}\"}] }\n}\n"))
	dir := f.TempDir()
	writeBinaries(f, dir)
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(dir, "deploy.hcl")
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		d, diags := Parse(path)
		if d == nil {
			t.Fatalf("no deployment (diagnostics %s)", Format(diags))
		}
	})
}
