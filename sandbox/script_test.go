package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestScriptInterpreters: a script's #! program, and for /usr/bin/env the
// program env finds, may run in the sandbox; a binary needs nothing more.
func TestScriptInterpreters(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o755); err != nil {
			t.Fatal(err)
		}
		return p
	}
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh here")
	}
	for _, tc := range []struct {
		name, content string
		want          []string
	}{
		{"direct", "#!/bin/sh -e\necho hi\n", []string{"/bin/sh"}},
		{"env", "#!/usr/bin/env sh\necho hi\n", []string{"/usr/bin/env", sh}},
		{"env with options", "#!/usr/bin/env -S LC_ALL=C sh -e\n", []string{"/usr/bin/env", sh}},
		{"env, no such program", "#!/usr/bin/env no-such-program-here\n", []string{"/usr/bin/env"}},
		{"not a script", "\x7fELF", nil},
		{"empty #!", "#!\n", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := scriptInterpreters(write(tc.name, tc.content)); !slices.Equal(got, tc.want) {
				t.Errorf("scriptInterpreters = %q, want %q", got, tc.want)
			}
		})
	}
	if got := scriptInterpreters(filepath.Join(dir, "missing")); got != nil {
		t.Errorf("a missing file: %q", got)
	}
}
