//go:build unix

package launcher

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// A server the bridge may not run (as when its sandbox's exec list leaves
// the interpreter out) names the exec list; a missing one does not.
func TestStartErrorNamesTheExecList(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "server")
	if err := os.WriteFile(prog, []byte("#!/bin/sh\n"), 0o644); err != nil { // not executable: EACCES, as Landlock answers
		t.Fatal(err)
	}
	err := exec.Command(prog).Start()
	if err == nil {
		t.Fatal("a file without execute permission started")
	}
	got := startError(prog, err)
	if !strings.Contains(got, "permission denied") || !strings.Contains(got, `exec = ["`+prog+`"]`) {
		t.Errorf("startError = %q, want the error and the exec list to add the program to", got)
	}
	missing := filepath.Join(dir, "nope")
	err = exec.Command(missing).Start()
	if got := startError(missing, err); strings.Contains(got, "exec =") {
		t.Errorf("a missing program is blamed on the exec list: %q", got)
	}
}
