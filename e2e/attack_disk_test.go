package e2e

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// smallDisk mounts a tmpfs of size bytes at a new folder and returns it;
// it is unmounted at the end of the test. It needs root (CI runs as root).
func smallDisk(t *testing.T, size int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "disk")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d", size)); err != nil {
		testenv.Missing(t, "a tmpfs mount, which needs root: %v", err)
	}
	t.Cleanup(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// fill writes a file into dir until its file system is full, and returns
// the file's path.
func fill(t *testing.T, dir string) string {
	t.Helper()
	path := filepath.Join(dir, "filler")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("filling %s: %v", dir, err)
			}
			return path
		}
	}
}

// TestAttackFullDiskCriticalAudit: with the audit log on a file system
// that fills up, a critical audit never acknowledges a result it did not
// write: calls are DENIED naming audit while it cannot write, `host status`
// shows why, and once there is room again it writes what it held and what
// queued meanwhile (the denied calls included) and calls succeed. No part
// of a line is left behind: the log verifies.
func TestAttackFullDiskCriticalAudit(t *testing.T) {
	needBinaries(t)
	disk := smallDisk(t, 256<<10)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(disk, "audit.log")
	config := writeFilesAudit(t, dir, logPath)
	h := startHost(t, config, 2)
	read := func() (ok bool, code, by string) {
		r, _ := callJSON(t, config, "read_file", `{"path":"notes.md"}`)
		if r.Error != nil {
			return r.OK, r.Error.Code, r.DecidedBy
		}
		return r.OK, "", r.DecidedBy
	}
	if ok, code, _ := read(); !ok {
		t.Fatalf("first call: %s", code)
	}
	auditPID := statusOf(t, config)["audit"].PID

	filler := fill(t, disk)
	// The next result cannot be written: from then on calls are refused.
	denied := 0
	deadline := time.Now().Add(30 * time.Second)
	for denied < 3 {
		if time.Now().After(deadline) {
			t.Fatalf("calls were not refused on a full disk\n%s", tail(h.stderr.String()))
		}
		ok, code, by := read()
		switch {
		case ok:
		case code == "DENIED" && by == "audit":
			denied++
		default:
			t.Fatalf("a call on a full disk ended %s decided by %q", code, by)
		}
	}
	st := statusOf(t, config)["audit"]
	if !strings.Contains(st.Problem, "no space left on device") || st.State != "ACTIVE" || st.PID != auditPID {
		t.Errorf("status of audit while the disk is full: %+v", st)
	}
	out, _, _ := cli(t, "status", "-c", config)
	if !strings.Contains(out, "audit: problem: ") {
		t.Errorf("status does not show the problem:\n%s", out)
	}

	if err := os.Remove(filler); err != nil {
		t.Fatal(err)
	}
	if !testkit.Eventually(30*time.Second, func() bool { ok, _, _ := read(); return ok }) {
		t.Fatalf("calls still refused after the disk has room again\n%s", tail(h.stderr.String()))
	}
	if st := statusOf(t, config)["audit"]; st.Problem != "" || st.PID != auditPID {
		t.Errorf("status of audit after recovery: %+v", st)
	}
	r, _ := callJSON(t, config, "audit_head", `{}`)
	var head struct {
		Seq  int
		Hash string
	}
	if !r.OK || json.Unmarshal(r.Value, &head) != nil || head.Seq < denied+2 {
		t.Fatalf("audit_head: %+v %s", r, r.Value)
	}
	if _, stderr, code := cli(t, "stop", "-c", config); code != 0 {
		t.Fatalf("stop: exit %d %s", code, stderr)
	}
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		t.Fatal("host run did not stop")
	}

	verify := exec.Command(pluginPath("audit"), "verify", "--expect-head", head.Hash, logPath)
	vout, err := verify.CombinedOutput()
	if err != nil || !strings.Contains(string(vout), fmt.Sprintf("expected head found at line %d", head.Seq)) {
		t.Fatalf("audit verify: %v\n%s", err, vout)
	}
	log, _ := os.ReadFile(logPath)
	if n := strings.Count(string(log), `"decided_by":"audit"`); n < denied {
		t.Errorf("%d denied calls in the log, want at least %d:\n%s", n, denied, log)
	}
	if n := strings.Count(string(log), "\n"); n < denied+3 {
		t.Errorf("%d lines in the log, want every call (at least %d)", n, denied+3)
	}
}
