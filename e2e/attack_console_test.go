package e2e

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// TestAttackConsoleAsAnotherUser: another local user (nobody) who opens
// the console's audit page over loopback gets the sign-in form, not the
// audit lines: the loopback lineage check lets in the host's own user
// only. TestConsoleAuditInABrowser checks the same after its browser's
// visit; this one runs without a browser, with `make attack`.
func TestAttackConsoleAsAnotherUser(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	addr := freePort(t)
	h := startApprovalsHost(t, "\nconsole {\n  listen    = \""+addr+"\"\n  audit_log = \"run/audit/audit.log\"\n}\n")
	if _, stderr, code := cli(t, "call", "-c", h.config, "list_dir", `{"path":"."}`); code != 0 {
		t.Fatalf("host call list_dir: exit %d %s", code, stderr)
	}
	waitAuditLines(t, filepath.Join(h.dir, "run", "audit", "audit.log"), 1)
	otherUserGetsSignIn(t, ctx, "http://"+addr, "list_dir")
}

// otherUserGetsSignIn opens base's /audit as the user nobody and checks
// that the console answers with its sign-in form, without hidden (a word
// of an audit line).
func otherUserGetsSignIn(t *testing.T, ctx context.Context, base, hidden string) {
	t.Helper()
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root, to open the console as another user")
	}
	cmd := exec.CommandContext(ctx, otherUserBinary(t))
	cmd.Env = []string{consoleClientEnv + "=" + base + "/audit"}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	cmd.Dir = "/"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the other user's request: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(out), base+"/signin\n") || !strings.Contains(string(out), `id="credential"`) || strings.Contains(string(out), hidden) {
		t.Errorf("another user opening /audit got:\n%s", out)
	}
}
