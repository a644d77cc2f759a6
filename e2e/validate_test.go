package e2e

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

// TestValidateReportsEveryProblem: an error in a plugin block (or the host
// block) does not hide the errors in that plugin's config, nor in another
// plugin's; a typo close to a known name gets a "did you mean".
func TestValidateReportsEveryProblem(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.hcl")
	src := fmt.Sprintf(`host {
  admin_socket = "host.sock"
  log_levl     = "info"
}
plugin "files" {
  path    = %q
  critcal = true
  config {
    rooot = "."
  }
}
plugin "safety" {
  path = %q
  config {
    deny "x" {
      pattern = ["("]
    }
  }
}
plugin "missing" {
  path = "bin/nope"
}
`, pluginPath("files"), pluginPath("safety"))
	if err := os.WriteFile(config, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := cli(t, "validate", "-c", config)
	if code != 1 {
		t.Fatalf("validate: exit %d\n%s", code, stderr)
	}
	for _, want := range []string{
		`config.hcl:3:3: Unsupported argument: An argument named "log_levl" is not allowed in the host block. Did you mean "log_level"?`,
		`config.hcl:7:3: Unsupported argument: An argument named "critcal" is not allowed in the plugin block. Did you mean "critical"?`,
		`config.hcl:9:5: Invalid plugin config: Plugin "files": config at /rooot is not allowed by the plugin's config schema. Did you mean "root"?`,
		`config.hcl:16:18: Invalid plugin config: Plugin "safety"`,
		`config.hcl:21:10: Plugin binary not found`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("validate does not report\n  %s\nin:\n%s", want, stderr)
		}
	}
}
