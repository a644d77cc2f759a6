//go:build linux || darwin

package main

import (
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// A named pipe must be refused before it is opened: opening one blocks until
// the other end is opened, and would hang the call.
func TestNamedPipe(t *testing.T) {
	f := newFixture(t, Config{})
	if err := syscall.Mkfifo(filepath.Join(f.root, "pipe"), 0o644); err != nil {
		t.Skipf("cannot make a named pipe: %v", err)
	}
	t.Run("read_file", func(t *testing.T) {
		f.wantError("read_file", `{"path":"pipe"}`, `read_file "pipe"`, "not a regular file")
	})
	t.Run("write_file", func(t *testing.T) {
		f.wantError("write_file", `{"path":"pipe","content":"x"}`, `write_file "pipe"`, "not a regular file")
	})
	t.Run("list_dir shows it as other", func(t *testing.T) {
		out, err := f.call("list_dir", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"name":"pipe","type":"other"}`; !strings.Contains(out, want) {
			t.Errorf("got %s, want an entry %s", out, want)
		}
	})
}
