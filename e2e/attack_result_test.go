package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// bigResultHost starts the shipped deployment with a critical audit limited
// to 256 MiB, a files plugin that reads files of up to 100 MiB, and a 60 MB
// file in its workspace; filesBlock and host are added to the files plugin's
// and the host's blocks.
func bigResultHost(t *testing.T, filesBlock, host string) *faultHost {
	t.Helper()
	dir := t.TempDir()
	tw := faultTweaks("audit")
	tw.host = host
	plugin := tw.plugin
	tw.plugin = func(name string) string {
		if name == "files" {
			return plugin(name) + filesBlock
		}
		return plugin(name)
	}
	config := deploymentFileWith(t, dir, tw)
	hcl := readFile(t, config)
	hcl = replaceOnce(t, hcl, `root = "workspace"`, "root = \"workspace\"\n    max_bytes = 104857600")
	hcl = replaceOnce(t, hcl, `write = ["run/audit"]`, "write = [\"run/audit\"]\n    limits {\n      memory = \"256MiB\"\n    }")
	writeFileAtomic(t, config, hcl)
	// 60 MB of JSON-safe text: the result is as large as the file.
	big := bytes.Repeat([]byte("0123456789abcdef"), 60_000_000/16)
	if err := os.WriteFile(filepath.Join(dir, "workspace", "big.txt"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	return startFaultHostWith(t, dir, config)
}

// checkAuditUnharmed asserts that audit still runs in the process it ran in
// before (pid) and that a call after the big one works and is audited.
func checkAuditUnharmed(t *testing.T, h *faultHost, pid int) {
	t.Helper()
	st := h.status(t)["audit"]
	if st.State != "ACTIVE" || st.PID != pid || st.Restarts != 0 {
		t.Errorf("after the big result, audit is %s in pid %d after %d restarts (was pid %d); want ACTIVE in the same process\nhost log:\n%s",
			st.State, st.PID, st.Restarts, pid, tail(h.run.stderr.String()))
	}
	if r, code := callJSON(t, h.config, "read_file", `{"path":"notes.md"}`); code != 0 || !r.OK {
		t.Errorf("read_file after the big result: exit %d %+v", code, r)
	}
}

// checkAuditLog stops the host and checks that the audit log verifies and
// has a line for the call id.
func checkAuditLog(t *testing.T, h *faultHost, id string) {
	t.Helper()
	h.stop(t)
	logPath := filepath.Join(h.dir, "run", "audit", "audit.log")
	if out, err := exec.Command(pluginPath("audit"), "verify", logPath).CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v: %s", err, out)
	}
	if n := auditLines(t, logPath)[id]; n != 1 {
		t.Errorf("the audit log has %d lines for the big call %s; want 1", n, id)
	}
}

// TestAttackLargeResultDefaultLimit: a tool returning a 60 MB result, with
// the default max_result_bytes, ends TOOL_ERROR naming the limit; audit
// (critical, 256 MiB) is not harmed and records the call, and other calls
// keep working. (Before the limit, the result crashed audit by out of
// memory, and the same batch crashed every new process until audit was
// FAILED and every call DENIED.)
func TestAttackLargeResultDefaultLimit(t *testing.T) {
	needShippedDeployment(t)
	h := bigResultHost(t, "", "")
	pid := h.status(t)["audit"].PID
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := h.client.Call(ctx, "read_file", json.RawMessage(`{"path":"big.txt"}`), nil)
	if err != nil {
		t.Fatalf("read_file big.txt: %v", err)
	}
	if r.OK || r.Error == nil || r.Error.Code != "TOOL_ERROR" || !strings.Contains(r.Error.Message, "max_result_bytes") {
		t.Fatalf("read_file of a 60 MB file = %+v; want TOOL_ERROR naming max_result_bytes", r)
	}
	t.Logf("refused: %s: %s", r.Error.Code, r.Error.Message)
	checkAuditUnharmed(t, h, pid)
	checkAuditLog(t, h, r.ID)
}

// TestAttackLargeResultRaisedLimit: with the files plugin's
// max_result_bytes raised past 60 MB the caller gets the result, and audit
// (its own limit the default 16 MiB) receives it as size, digest and head:
// it writes its line and keeps running.
func TestAttackLargeResultRaisedLimit(t *testing.T) {
	needShippedDeployment(t)
	h := bigResultHost(t, "  max_result_bytes = 104857600\n", "  max_message_bytes = 134217728\n")
	pid := h.status(t)["audit"].PID
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := h.client.Call(ctx, "read_file", json.RawMessage(`{"path":"big.txt"}`), nil)
	if err != nil {
		t.Fatalf("read_file big.txt: %v", err)
	}
	if !r.OK || len(r.Value) < 60_000_000 {
		t.Fatalf("read_file of a 60 MB file under a 100 MiB limit: ok=%v, %d bytes, error %+v", r.OK, len(r.Value), r.Error)
	}
	checkAuditUnharmed(t, h, pid)
	checkAuditLog(t, h, r.ID)
}
