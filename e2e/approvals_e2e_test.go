package e2e

import (
	"context"
	"crypto/hmac"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// approvalsHost is a host of the sample deployment with two approval
// routes and MCP on loopback for API keys: delete_file's Asks go to this
// OS user (route oncall), write_file's to a quorum of two (route pair,
// short timeout).
type approvalsHost struct {
	config, dir, endpoint, me string
	key                       string // the MCP agent's API key (agent:ci-bot)
	annKey                    string // an approver's API key (user:ann)
	// hooks are the webhook notifications of route oncall, each checked
	// against its signature.
	hooks chan approvals.Notification
	run   *running
}

func startApprovalsHost(t *testing.T, more string) *approvalsHost {
	t.Helper()
	return startApprovalsHostWith(t, more, "")
}

// startApprovalsHostWith is startApprovalsHost with safetyRules added to
// the safety plugin's config.
func startApprovalsHostWith(t *testing.T, more, safetyRules string) *approvalsHost {
	t.Helper()
	needShippedDeployment(t)
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.hcl")
	out, stderr, code := cli(t, "key", "add", "ci-bot", "-f", keysFile)
	if code != 0 {
		t.Fatalf("host key add: exit %d %s", code, stderr)
	}
	annOut, stderr, code := cli(t, "key", "add", "ann", "--kind", "user", "-f", keysFile)
	if code != 0 {
		t.Fatalf("host key add ann: exit %d %s", code, stderr)
	}
	me := admin.LocalPrincipal(os.Getuid()).String()
	hooks := make(chan approvals.Notification, 16)
	const secret = "webhook-test-secret"
	t.Setenv("PLUGKIT_TEST_HOOK_SECRET", secret)
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if !hmac.Equal([]byte(r.Header.Get(approvals.SignatureHeader)), []byte(approvals.Sign([]byte(secret), body))) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var n approvals.Notification
		if json.Unmarshal(body, &n) != nil {
			http.Error(w, "bad body", http.StatusBadRequest)
			return
		}
		select {
		case hooks <- n:
		default:
		}
	}))
	t.Cleanup(receiver.Close)
	addr := freePort(t)
	routes := fmt.Sprintf(`
approval "oncall" {
  approvers = [%[1]q, "user:ann"]
  timeout   = "2m"
  tools     = ["delete_file"]
  webhook {
    url        = %[2]q
    secret_env = "PLUGKIT_TEST_HOOK_SECRET"
  }
}

approval "pair" {
  approvers = [%[1]q, "group:plugkit-nobody"]
  quorum    = 2
  timeout   = "4s"
  tools     = ["write_file"]
}
`, me, receiver.URL) + more
	config := deploymentFileWith(t, dir, deploymentTweaks{
		host:        fmt.Sprintf("  receipts = true\n  receipts_from = \"audit\"\n  mcp = %q\n  mcp_auth {\n    keys = %q\n  }\n", addr, keysFile),
		more:        routes,
		safetyRules: safetyRules,
		plugin: func(name string) string {
			if name == "audit" {
				return "  critical = true\n"
			}
			return ""
		},
	})
	h := &approvalsHost{config: config, dir: dir, endpoint: "http://" + addr + "/mcp", me: me, key: strings.TrimSpace(out), annKey: strings.TrimSpace(annOut), hooks: hooks}
	h.run = startHost(t, config, len(shippedPlugins))
	return h
}

// agent connects an MCP client that cannot answer elicitations.
func (h *approvalsHost) agent(t *testing.T, ctx context.Context, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "unattended-agent", Version: "1"}, opts)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.endpoint,
		HTTPClient: &http.Client{Transport: bearer{h.key, http.DefaultTransport}}},
		// A session (2025-11-25): the call's request is held, with
		// progress; a 2026-07-28 client, served without one, is answered
		// input-required and retries (TestApprovalsRoutedStateless).
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect the agent: %v\n%s", err, h.run.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// pending waits for the pending request of tool and returns it.
func (h *approvalsHost) pending(t *testing.T, tool string) admin.ApprovalRequest {
	t.Helper()
	var found admin.ApprovalRequest
	if !testkit.Eventually(30*time.Second, func() bool {
		out, stderr, code := cli(t, "approvals", "list", "--json", "-c", h.config)
		if code != 0 {
			t.Fatalf("host approvals list: exit %d %s", code, stderr)
		}
		var reqs []admin.ApprovalRequest
		if err := json.Unmarshal([]byte(out), &reqs); err != nil {
			t.Fatalf("host approvals list --json: %v: %q", err, out)
		}
		for _, r := range reqs {
			if r.Tool == tool && r.State == "pending" {
				found = r
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no pending approval request for %s\n%s", tool, h.run.stderr)
	}
	return found
}

// mcpCallAsync makes a call on its own goroutine.
func mcpCallAsync(ctx context.Context, cs *mcp.ClientSession, tool, args string) <-chan *mcp.CallToolResult {
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		p := &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)}
		p.SetProgressToken("held-" + tool)
		r, err := cs.CallTool(ctx, p)
		if err != nil {
			r = &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "transport: " + err.Error()}}}
		}
		done <- r
	}()
	return done
}

// TestApprovalsRoutedThroughBinaries: an MCP agent with no elicitation
// calls a destructive tool routed to another principal; the call waits
// until that principal approves with `host approvals approve`, then runs.
// The caller cannot approve its own call; a quorum of two is not met by
// one approver twice; a Deny ends a call with its reason; a route's
// timeout ends a call DENIED saying from whom no approval came; an
// approval is for one call's arguments only.
func TestApprovalsRoutedThroughBinaries(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := startApprovalsHost(t, "")
	progress := make(chan string, 16)
	cs := h.agent(t, ctx, &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
		select {
		case progress <- r.Params.Message:
		default:
		}
	}})
	workspace := filepath.Join(h.dir, "workspace")

	t.Run("approved by another principal", func(t *testing.T) {
		done := mcpCallAsync(ctx, cs, "delete_file", `{"path":"todo.md"}`)
		req := h.pending(t, "delete_file")
		if req.Principal != "agent:ci-bot" || req.Route != "oncall" || req.ArgsSHA256 == "" {
			t.Fatalf("request = %+v", req)
		}
		// The route's webhook got a notification signed with its secret.
		if n := recvWithin(t, ctx, h.hooks, "the route's webhook notification"); n.Request != req.ID || n.Tool != "delete_file" || n.Principal != "agent:ci-bot" || !strings.Contains(n.Text, "agent:ci-bot wants to call delete_file") {
			t.Errorf("webhook notification = %+v", n)
		}
		show, _, code := cli(t, "approvals", "show", req.ID, "-c", h.config)
		if code != 0 || !strings.Contains(show, `{"path":"todo.md"}`) || !strings.Contains(show, "agent:ci-bot") {
			t.Errorf("host approvals show: exit %d\n%s", code, show)
		}
		if _, err := os.Stat(filepath.Join(workspace, "todo.md")); err != nil {
			t.Fatalf("the file went before the approval: %v", err)
		}
		// The held call tells its client whom it waits for (progress, so
		// that a client resetting its timeout on progress keeps waiting).
		if msg := recvWithin(t, ctx, progress, "a progress notification while held"); !strings.Contains(msg, "waiting for approval by "+h.me+" or user:ann (request "+req.ID) {
			t.Errorf("progress while held: %q", msg)
		}
		out, stderr, code := cli(t, "approvals", "approve", req.ID, "-c", h.config)
		if code != 0 || !strings.Contains(out, "approved by "+h.me) {
			t.Fatalf("host approvals approve: exit %d %q %s", code, out, stderr)
		}
		r := <-done
		if r.IsError {
			t.Fatalf("approved call: %s", toolText(r))
		}
		if _, err := os.Stat(filepath.Join(workspace, "todo.md")); !os.IsNotExist(err) {
			t.Errorf("the approved delete did not run: %v", err)
		}
		// The call's receipt is its audit line's hash, and that line
		// names the approval; the chain verifies (audit prove turns a
		// receipt into a proof once a signing audit has signed it).
		var rec admin.Receipt
		if raw, err := json.Marshal(r.Meta["plugkit/receipt"]); err != nil || json.Unmarshal(raw, &rec) != nil || rec.Seq == 0 {
			t.Fatalf("approved call without a receipt: %v", r.Meta)
		}
		logPath := filepath.Join(h.dir, "run", "audit", "audit.log")
		line := auditLine(t, logPath, rec.Seq)
		var l struct {
			Hash     string `json:"hash"`
			Approval struct {
				ID        string `json:"id"`
				Route     string `json:"route"`
				State     string `json:"state"`
				Decisions []struct {
					By      string `json:"by"`
					Approve bool   `json:"approve"`
				} `json:"decisions"`
			} `json:"approval"`
		}
		if err := json.Unmarshal([]byte(line), &l); err != nil {
			t.Fatal(err)
		}
		if a := l.Approval; a.ID != req.ID || a.Route != "oncall" || a.State != "approved" || len(a.Decisions) != 1 || a.Decisions[0].By != h.me || !a.Decisions[0].Approve || l.Hash != rec.Hash {
			t.Errorf("audit line of the approved call does not name its approval: %s (receipt %+v)", line, rec)
		}
		if out, stderr, code := auditCmd(t, "verify", logPath); code != 0 {
			t.Errorf("audit verify: exit %d %s %s", code, out, stderr)
		}
		// Answered, the request no longer takes answers.
		if _, _, code := cli(t, "approvals", "deny", req.ID, "-c", h.config); code != exitFailed {
			t.Errorf("deny after approval: exit %d, want %d", code, exitFailed)
		}
	})

	t.Run("the caller cannot approve its own call; cancelling withdraws", func(t *testing.T) {
		// host call is made for this OS user, the route's approver.
		cctx, stop := context.WithCancel(ctx)
		defer stop()
		cmd := exec.CommandContext(cctx, bins.Path("host"), "call", "-c", h.config, "delete_file", `{"path":"notes.md"}`)
		stderr := &testkit.Buffer{}
		cmd.Stderr = stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait() }()
		req := h.pending(t, "delete_file")
		out, errText, code := cli(t, "approvals", "approve", req.ID, "-c", h.config)
		if code != exitFailed || !strings.Contains(errText, "the call's own principal cannot approve") {
			t.Errorf("self-approval: exit %d %q %s", code, out, errText)
		}
		if _, _, code := cli(t, "approvals", "deny", req.ID, "-c", h.config, "--reason", "mine"); code != exitFailed {
			t.Errorf("self-deny: exit %d, want refused", code)
		}
		show, _, _ := cli(t, "approvals", "show", req.ID, "-c", h.config)
		if !strings.Contains(show, "refused: the call's own principal") {
			t.Errorf("the refused answer is not on the request:\n%s", show)
		}
		if !strings.Contains(stderr.String(), "waiting for approval by "+h.me+" or user:ann (request "+req.ID) {
			t.Errorf("host call did not say what it waits for:\n%s", stderr)
		}
		// The caller gives up: its request is withdrawn, not left to
		// be approved.
		stop()
		<-exited
		var o string
		if !testkit.Eventually(30*time.Second, func() bool {
			var got admin.ApprovalRequest
			o, _, _ = cli(t, "approvals", "show", req.ID, "--json", "-c", h.config)
			return json.Unmarshal([]byte(o), &got) == nil && got.State == "withdrawn"
		}) {
			t.Fatalf("request %s after the call was cancelled: %s", req.ID, o)
		}
		if _, err := os.Stat(filepath.Join(workspace, "notes.md")); err != nil {
			t.Errorf("notes.md was deleted: %v", err)
		}
	})

	t.Run("quorum of two distinct approvers, then timeout", func(t *testing.T) {
		done := mcpCallAsync(ctx, cs, "write_file", `{"path":"new.md","content":"x"}`)
		req := h.pending(t, "write_file")
		out, _, code := cli(t, "approvals", "approve", req.ID, "-c", h.config)
		if code != 0 || !strings.Contains(out, "1 of 2") {
			t.Fatalf("first approval: exit %d %q", code, out)
		}
		out, stderr, code := cli(t, "approvals", "approve", req.ID, "-c", h.config)
		if code != exitFailed || !strings.Contains(stderr, "already answered") {
			t.Errorf("the same approver twice: exit %d %q %s", code, out, stderr)
		}
		r := <-done
		if !r.IsError || !strings.Contains(toolText(r), "DENIED: no approval within 4s from "+h.me+" or group:plugkit-nobody") {
			t.Errorf("one approver of two, then the timeout: %s", toolText(r))
		}
		if _, err := os.Stat(filepath.Join(workspace, "new.md")); !os.IsNotExist(err) {
			t.Errorf("write_file ran without its quorum: %v", err)
		}
	})

	t.Run("deny with a reason; an approval is for its call's arguments", func(t *testing.T) {
		done := mcpCallAsync(ctx, cs, "delete_file", `{"path":"notes.md"}`)
		first := h.pending(t, "delete_file")
		if _, stderr, code := cli(t, "approvals", "deny", first.ID, "--reason", "not on a Friday", "-c", h.config); code != 0 {
			t.Fatalf("deny: exit %d %s", code, stderr)
		}
		r := <-done
		if !r.IsError || !strings.Contains(toolText(r), "DENIED: denied by "+h.me+": not on a Friday") {
			t.Errorf("denied call: %s", toolText(r))
		}
		// The same call again is a new request: the deny, like an
		// approval, was for that call alone.
		again := mcpCallAsync(ctx, cs, "delete_file", `{"path":"notes.md"}`)
		second := h.pending(t, "delete_file")
		if second.ID == first.ID {
			t.Fatalf("a second call reused request %s", first.ID)
		}
		// An answer given for other arguments is refused (the CLI sends
		// the hash of the arguments it was shown).
		var other admin.DecideRequest
		other.ArgsSHA256 = strings.Repeat("0", 64)
		c := admin.NewClient(filepath.Join(h.dir, "run", "host.sock"))
		if _, err := c.Decide(ctx, second.ID, true, other); err == nil || !strings.Contains(err.Error(), "not those the answer was given for") {
			t.Errorf("approval for other arguments: %v", err)
		}
		if _, stderr, code := cli(t, "approvals", "approve", second.ID, "-c", h.config); code != 0 {
			t.Fatalf("approve: exit %d %s", code, stderr)
		}
		if r := <-again; r.IsError {
			t.Errorf("approved call: %s", toolText(r))
		}
	})
}

// auditLine waits for line seq of the audit log at path and returns it.
func auditLine(t *testing.T, path string, seq uint64) string {
	t.Helper()
	text := waitAuditLines(t, path, int(seq))
	return strings.Split(text, "\n")[seq-1]
}

// requestState is the state of request id, as host approvals show says.
func (h *approvalsHost) requestState(t *testing.T, id string) (string, admin.ApprovalRequest) {
	t.Helper()
	out, stderr, code := cli(t, "approvals", "show", id, "--json", "-c", h.config)
	var r admin.ApprovalRequest
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil {
		t.Fatalf("host approvals show %s: exit %d %q %s", id, code, out, stderr)
	}
	return r.State, r
}

// recvWithin receives from ch, failing the test when ctx ends first (a
// hang is a failure that says what it waited for, not a test timeout).
func recvWithin[T any](t *testing.T, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("no %s: %v", what, ctx.Err())
		var zero T
		return zero
	}
}
