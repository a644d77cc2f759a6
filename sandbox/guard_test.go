package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// guardedTree makes a host folder (run) and a plugin's write folder
// (sbx/w) side by side, as a deployment has them.
func guardedTree(t *testing.T) (run, w string, g []Guarded) {
	t.Helper()
	dir := t.TempDir()
	run, w = filepath.Join(dir, "run"), filepath.Join(dir, "sbx", "w")
	for _, d := range []string{run, w} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return run, w, []Guarded{{Path: run, What: "the admin socket's folder"}}
}

// swapForLink moves folder w aside (to w.old) and puts a symbolic link to
// target in its place, as a plugin that may write w's parent can.
func swapForLink(t *testing.T, w, target string) {
	t.Helper()
	if err := os.Rename(w, w+".old"); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(target, w); err != nil {
		t.Fatal(err)
	}
}

func TestCheckWriteFollowsLinks(t *testing.T) {
	run, w, g := guardedTree(t)
	if err := CheckWrite([]string{w}, g); err != nil {
		t.Fatalf("a folder of its own: %v", err)
	}
	if err := CheckWrite([]string{filepath.Dir(run)}, g); err == nil {
		t.Fatal("a folder above the guarded one was allowed")
	}
	swapForLink(t, w, run)
	err := CheckWrite([]string{w}, g)
	var ge *GuardError
	if !errors.As(err, &ge) {
		t.Fatalf("a link to the guarded folder: err = %v, want a GuardError", err)
	}
	if ge.Resolved != run || !strings.Contains(err.Error(), "now resolves to "+run) || !strings.Contains(err.Error(), "the admin socket's folder") {
		t.Errorf("error does not say where the path leads: %v", err)
	}
	// A missing folder below the link would be made inside run/.
	if err := CheckWrite([]string{filepath.Join(w, "sub")}, g); !errors.As(err, &ge) {
		t.Errorf("a path below a link into the guarded folder: err = %v, want a GuardError", err)
	}
	// A folder written inside the guarded one is the deployment's choice.
	if err := CheckWrite([]string{filepath.Join(run, "audit")}, g); err != nil {
		t.Errorf("a folder written inside the guarded one: %v", err)
	}
}

func TestOpenCheckedChecksTheDescriptor(t *testing.T) {
	run, w, g := guardedTree(t)
	name, done, err := openChecked(w, g)
	if err != nil {
		t.Fatalf("a folder of its own: %v", err)
	}
	// What is granted is the folder opened, whatever the name leads to
	// once it is checked.
	swapForLink(t, w, run)
	real, err := os.Readlink(name)
	done()
	if err != nil || real != w+".old" {
		t.Errorf("descriptor %s leads to %q (%v), want the folder opened, now %s.old", name, real, err, w)
	}
	if _, _, err := openChecked(w, g); err == nil {
		t.Fatal("a link to the guarded folder was opened and allowed")
	}
	name, done, err = openChecked(filepath.Join(t.TempDir(), "missing"), g)
	if err != nil || name != "" {
		t.Errorf("missing path: name %q, err %v; want none and no error", name, err)
	}
	done()
}

// TestLaunchRefusesLinkSwappedAfterCheck: a write folder swapped for a link
// to a guarded folder between the host's check (Command) and the launch is
// refused by the launcher, which checks what it grants.
func TestLaunchRefusesLinkSwappedAfterCheck(t *testing.T) {
	self := launcher(t)
	s := Detect(self)
	if s.LandlockABI < 1 {
		t.Skipf("kernel: %s", s)
	}
	run, w, g := guardedTree(t)
	cmd, err := Command(Launch{Launcher: self, Policy: Policy{Write: []string{w}}, Support: s, Binary: "/bin/sh",
		Args: []string{"-c", "echo x > " + w + "/pid"}, SocketDir: t.TempDir(), Guarded: g})
	if err != nil {
		t.Fatal(err)
	}
	swapForLink(t, w, run)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("the launcher started the plugin with write access to %s: %s", run, out)
	}
	if !strings.Contains(string(out), "the admin socket's folder") {
		t.Errorf("output does not say why: %s", out)
	}
	if _, err := os.Stat(filepath.Join(run, "pid")); err == nil {
		t.Error("the plugin wrote into the guarded folder")
	}
}
