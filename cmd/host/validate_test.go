package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// lineOf is the 1-based line of the first line of text containing marker.
func lineOf(t *testing.T, text, marker string) int {
	t.Helper()
	for i, l := range strings.Split(text, "\n") {
		if strings.Contains(l, marker) {
			return i + 1
		}
	}
	t.Fatalf("marker %q not in the file", marker)
	return 0
}

// TestValidateBrokenFiles runs `host validate` on files with one kind of
// error each and checks the error is reported at its file:line.
func TestValidateBrokenFiles(t *testing.T) {
	needBinaries(t)
	plugin := func(name string) string { return pluginPath(name) }
	cases := []struct {
		name    string
		hcl     string
		marker  string // the line the error must point at
		summary string
	}{
		{"syntax", `plugin "files" {
  path = "unterminated
}`, "unterminated", "Invalid multi-line string"},
		{"unknown attribute", fmt.Sprintf(`plugin "files" {
  path    = %q
  critcal = true
  config { root = "." }
}`, plugin("files")), "critcal", "Unsupported argument"},
		{"mistyped attribute", fmt.Sprintf(`plugin "files" {
  path     = %q
  critical = "yes"
  config { root = "." }
}`, plugin("files")), "critical", "Incorrect attribute value type"},
		{"duplicate plugin", fmt.Sprintf(`plugin "files" {
  path = %[1]q
  config { root = "." }
}
plugin "files" { # again
  path = %[1]q
  config { root = "." }
}`, plugin("files")), "# again", "Duplicate plugin"},
		{"missing provider", fmt.Sprintf(`plugin "search" {
  path   = %q
  inject = ["tools", "index"]
}`, plugin("search")), "inject", "No provider for service"},
		{"dependency cycle", fmt.Sprintf(`plugin "index" {
  path   = %q
  inject = ["tools", "index"]
  config { root = "." }
}`, plugin("index")), "inject", "Dependency cycle"},
		{"missing binary", `plugin "files" {
  path = "bin/nope"
}`, "bin/nope", "Plugin binary not found"},
		{"binary not executable", `plugin "files" {
  path = "not-executable"
}`, "not-executable", "Plugin binary not executable"},
		{"checksum mismatch", fmt.Sprintf(`plugin "files" {
  path   = %q
  sha256 = "%s"
  config { root = "." }
}`, plugin("files"), strings.Repeat("0", 64)), "sha256", "Checksum mismatch"},
		{"plugin config against its schema", fmt.Sprintf(`plugin "files" {
  path = %q
  config {
    root   = "."
    colour = "blue"
  }
}`, plugin("files")), "colour", "Invalid plugin config"},
		{"bad safety rule", fmt.Sprintf(`plugin "safety" {
  path = %q
  config {
    deny "broken" {
      pattern = ["(unclosed"]
    }
  }
}`, plugin("safety")), "unclosed", "Invalid plugin config"},
		{"bad secrets block", fmt.Sprintf(`plugin "safety" {
  path = %q
  config {
    secrets {
      arguments = "deny"
      results   = "mask"
    }
  }
}`, plugin("safety")), "mask", "Invalid plugin config"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "not-executable"), []byte("#!/bin/sh\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "broken.hcl"), []byte(c.hcl), 0o644); err != nil {
				t.Fatal(err)
			}
			out, stderr, code := cliIn(t, dir, "validate", "-c", "broken.hcl")
			if code != 1 {
				t.Fatalf("exit %d, want 1\nstdout: %s\nstderr: %s", code, out, stderr)
			}
			want := fmt.Sprintf("broken.hcl:%d:", lineOf(t, c.hcl, c.marker))
			found := false
			for _, l := range strings.Split(stderr, "\n") {
				if strings.HasPrefix(l, want) && strings.Contains(l, c.summary) {
					found = true
				}
			}
			if !found {
				t.Errorf("want a line starting %q with %q; got:\n%s", want, c.summary, stderr)
			}
		})
	}

	t.Run("every error at once", func(t *testing.T) {
		dir := t.TempDir()
		hcl := fmt.Sprintf(`plugin "a" {
  path    = "bin/nope"
}
plugin "b" {
  path    = %q
  critcal = true
}
`, plugin("files"))
		if err := os.WriteFile(filepath.Join(dir, "broken.hcl"), []byte(hcl), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code := cliIn(t, dir, "validate", "-c", "broken.hcl")
		if code != 1 || !strings.Contains(stderr, "broken.hcl:2:") || !strings.Contains(stderr, "broken.hcl:6:") {
			t.Errorf("exit %d; want both errors (lines 2 and 6):\n%s", code, stderr)
		}
	})
}
