package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestRunDirCannotBeMade: when the plugin socket folder cannot be made
// (a read-only /tmp in a container), `host run` says which folder, which
// setting chose it and what to set, and does not blame the file, which is
// fine.
func TestRunDirCannotBeMade(t *testing.T) {
	needBinaries(t)
	dir := shortTempDir(t)
	notADir := filepath.Join(dir, "file")
	if err := os.WriteFile(notADir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, host, tmpdir, setting string
	}{
		{"run_dir", fmt.Sprintf("  run_dir = %q\n", notADir), "", "(run_dir)"},
		{"TMPDIR", "", notADir, "(TMPDIR)"},
		// The sockets in run_dir, the host registry still in TMPDIR.
		{"registry", fmt.Sprintf("  run_dir = %q\n", dir), notADir, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := filepath.Join(dir, tc.name+".hcl")
			hcl := fmt.Sprintf("host {\n  admin_socket = %q\n%s}\nplugin \"safety\" {\n  path = %q\n}\n",
				filepath.Join(dir, "run-"+tc.name, "host.sock"), tc.host, pluginPath("safety"))
			if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(bins.Path("host"), "run", "-c", config)
			cmd.Env = append(os.Environ(), "TMPDIR="+tc.tmpdir)
			out, err := cmd.CombinedOutput()
			if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != exitFailed {
				t.Fatalf("host run: %v, want exit %d\n%s", err, exitFailed, out)
			}
			wants := []string{"cannot make a folder in " + notADir + " " + tc.setting, "set run_dir in the host block, or TMPDIR",
				"is valid, but the host cannot start on this machine"}
			if tc.name == "registry" {
				wants = []string{"host registry: mkdir " + notADir, "the registry of running hosts is made in TMPDIR (" + notADir + ")"}
			}
			for _, want := range wants {
				if !strings.Contains(string(out), want) {
					t.Errorf("host run does not say %q:\n%s", want, out)
				}
			}
			if strings.Contains(string(out), "is not valid") {
				t.Errorf("host run blames the file:\n%s", out)
			}
		})
	}
}

// TestRunDirInSharedMount: run_dir in a folder made as the kubelet makes an
// emptyDir (root's, mode 2777): the host starts, its plugin sockets in a
// folder of its own inside it (0700), so no other user of the mount can
// reach or replace them; the folder goes when the host stops.
func TestRunDirInSharedMount(t *testing.T) {
	needBinaries(t)
	dir := shortTempDir(t)
	shared := filepath.Join(dir, "rd")
	if err := os.Mkdir(shared, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(shared, 0o777|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.hcl")
	hcl := fmt.Sprintf("host {\n  admin_socket = \"run/admin/host.sock\"\n  run_dir = %q\n}\nplugin \"safety\" {\n  path = %q\n}\n", shared, pluginPath("safety"))
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 1)
	mine, _ := filepath.Glob(filepath.Join(shared, fmt.Sprintf("plugkit-%d-*", h.cmd.Process.Pid)))
	if len(mine) != 1 {
		t.Fatalf("socket folders of the host in run_dir: %v", mine)
	}
	fi, err := os.Stat(mine[0])
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o700 || fi.Mode()&os.ModeSetgid != 0 || int(st.Uid) != os.Geteuid() {
		t.Errorf("socket folder %s: mode %v, uid %d", mine[0], fi.Mode(), st.Uid)
	}
	if socks, _ := filepath.Glob(filepath.Join(mine[0], "*", "*")); len(socks) == 0 {
		t.Errorf("no plugin socket in %s", mine[0])
	}
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	<-h.done
	if h.err != nil {
		t.Fatalf("host run: %v\n%s", h.err, h.stderr)
	}
	if left, _ := filepath.Glob(filepath.Join(shared, "plugkit-*")); len(left) != 0 {
		t.Errorf("socket folders left after the host stopped: %v", left)
	}
}

// shortTempDir is a temporary folder with a short path (t.TempDir's are
// too long to hold Unix sockets below a run_dir), removed at the end.
func shortTempDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "pk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}
