package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
)

// startApprovalReplicas starts two hosts of the sample deployment that
// share their approval requests through one redis-server (approval_store,
// a 2s lease) and one keys file: agent:ci-bot calls, this OS user and
// user:ann approve. delete_file's Asks need one approver, write_file's
// two. Replica B also serves the console on consoleAddr.
func startApprovalReplicas(t *testing.T, consoleAddr string) (a, b *approvalsHost) {
	t.Helper()
	needShippedDeployment(t)
	redis := testredis.Start(t)
	keysDir := t.TempDir()
	keysFile := filepath.Join(keysDir, "keys.hcl")
	out, stderr, code := cli(t, "key", "add", "ci-bot", "-f", keysFile)
	if code != 0 {
		t.Fatalf("host key add: exit %d %s", code, stderr)
	}
	annOut, stderr, code := cli(t, "key", "add", "ann", "--kind", "user", "-f", keysFile)
	if code != 0 {
		t.Fatalf("host key add ann: exit %d %s", code, stderr)
	}
	me := admin.LocalPrincipal(os.Getuid()).String()
	routes := fmt.Sprintf(`
approval "oncall" {
  approvers = [%[1]q, "user:ann"]
  timeout   = "2m"
  tools     = ["delete_file"]
}

approval "pair" {
  approvers = [%[1]q, "user:ann"]
  quorum    = 2
  timeout   = "2m"
  tools     = ["write_file"]
}
`, me)
	start := func(more string) *approvalsHost {
		dir := t.TempDir()
		addr := freePort(t)
		config := deploymentFileWith(t, dir, deploymentTweaks{
			host: fmt.Sprintf("  receipts = true\n  receipts_from = \"audit\"\n  mcp = %q\n  approval_store = %q\n  approval_lease_ttl = \"2s\"\n  mcp_auth {\n    keys = %q\n  }\n",
				addr, redis.URL(), keysFile),
			more: routes + more,
			plugin: func(name string) string {
				if name == "audit" {
					return "  critical = true\n"
				}
				return ""
			},
		})
		h := &approvalsHost{config: config, dir: dir, endpoint: "http://" + addr + "/mcp", me: me,
			key: strings.TrimSpace(out), annKey: strings.TrimSpace(annOut)}
		h.run = startHost(t, config, len(shippedPlugins))
		return h
	}
	return start(""), start("\nconsole {\n  listen = \"" + consoleAddr + "\"\n}\n")
}

// approvalLine is the approval of the audit line that the receipt in a
// call's result names, on replica h.
func approvalLine(t *testing.T, h *approvalsHost, meta map[string]any) (state, holder string, by []string) {
	t.Helper()
	var rec admin.Receipt
	if raw, err := json.Marshal(meta["plugkit/receipt"]); err != nil || json.Unmarshal(raw, &rec) != nil || rec.Seq == 0 {
		t.Fatalf("a call without a receipt: %v", meta)
	}
	line := auditLine(t, filepath.Join(h.dir, "run", "audit", "audit.log"), rec.Seq)
	var l struct {
		Approval struct {
			State     string `json:"state"`
			Holder    string `json:"holder"`
			Decisions []struct {
				By      string `json:"by"`
				Refused string `json:"refused"`
			} `json:"decisions"`
		} `json:"approval"`
	}
	if err := json.Unmarshal([]byte(line), &l); err != nil {
		t.Fatal(err)
	}
	for _, d := range l.Approval.Decisions {
		if d.Refused == "" {
			by = append(by, d.By)
		}
	}
	return l.Approval.State, l.Approval.Holder, by
}

// TestApprovalsAcrossReplicas: two `host run` share a redis-server. A
// call an unattended MCP agent makes on replica A waits there; replica
// B's `host approvals` lists it and approves it, and the agent gets the
// tool's result from A, whose audit line names B's approver. A quorum of
// two takes two distinct principals, one on each replica (this user with
// the CLI, user:ann in B's console), not one twice, and the caller
// signed in to B's console cannot approve its own call. When A is killed
// with a call parked, B shows its request abandoned and refuses to
// approve it.
func TestApprovalsAcrossReplicas(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	consoleAddr := freePort(t)
	a, b := startApprovalReplicas(t, consoleAddr)
	cs := a.agent(t, ctx, nil)
	workspace := filepath.Join(a.dir, "workspace")

	t.Run("parked on A, approved on B", func(t *testing.T) {
		done := mcpCallAsync(ctx, cs, "delete_file", `{"path":"todo.md"}`)
		req := b.pending(t, "delete_file")
		if req.Principal != "agent:ci-bot" || req.Holder == "" {
			t.Fatalf("B lists %+v", req)
		}
		show, _, code := cli(t, "approvals", "show", req.ID, "-c", b.config)
		if code != 0 || !strings.Contains(show, `{"path":"todo.md"}`) || !strings.Contains(show, "held by    "+req.Holder) {
			t.Errorf("host approvals show on B: exit %d\n%s", code, show)
		}
		out, stderr, code := cli(t, "approvals", "approve", req.ID, "-c", b.config)
		if code != 0 || !strings.Contains(out, "approved by "+b.me) {
			t.Fatalf("host approvals approve on B: exit %d %q %s", code, out, stderr)
		}
		r := recvWithin(t, ctx, done, "the approved call's result")
		if r.IsError {
			t.Fatalf("the call approved on B: %s\n%s", toolText(r), a.run.stderr)
		}
		if _, err := os.Stat(filepath.Join(workspace, "todo.md")); !os.IsNotExist(err) {
			t.Errorf("the approved delete did not run on A: %v", err)
		}
		if state, holder, by := approvalLine(t, a, r.Meta); state != "approved" || holder != req.Holder || len(by) != 1 || by[0] != b.me {
			t.Errorf("A's audit line: approval %s (held by %s) by %v, want approved by %s, held by %s", state, holder, by, b.me, req.Holder)
		}
		// A lists it as B answered it.
		if got, _ := a.requestState(t, req.ID); got != "approved" {
			t.Errorf("A shows the request %s", got)
		}
	})

	t.Run("quorum of two distinct principals across replicas", func(t *testing.T) {
		done := mcpCallAsync(ctx, cs, "write_file", `{"path":"new.md","content":"x"}`)
		req := b.pending(t, "write_file")
		out, _, code := cli(t, "approvals", "approve", req.ID, "-c", b.config)
		if code != 0 || !strings.Contains(out, "1 of 2") {
			t.Fatalf("first approval, on B: exit %d %q", code, out)
		}
		// The same principal again, on the other replica, does not count.
		if out, stderr, code := cli(t, "approvals", "approve", req.ID, "-c", a.config); code != exitFailed || !strings.Contains(stderr, "already answered") {
			t.Errorf("the same approver on A: exit %d %q %s", code, out, stderr)
		}
		if got, _ := b.requestState(t, req.ID); got != "pending" {
			t.Fatalf("one distinct approver of two: %s", got)
		}
		// The caller itself, signed in to B's console, is refused.
		if page := consoleApprove(t, "http://"+consoleAddr, b.key, req.ID, req.ArgsSHA256); !strings.Contains(html.UnescapeString(page), "the call's own principal cannot approve") {
			t.Errorf("the caller approving its own call in B's console:\n%s", page)
		}
		if page := consoleApprove(t, "http://"+consoleAddr, b.annKey, req.ID, req.ArgsSHA256); !strings.Contains(page, "approved by") {
			t.Errorf("ann's approval in B's console:\n%s", page)
		}
		r := recvWithin(t, ctx, done, "the call approved by two")
		if r.IsError {
			t.Fatalf("the call approved by two: %s", toolText(r))
		}
		if _, err := os.Stat(filepath.Join(workspace, "new.md")); err != nil {
			t.Errorf("write_file did not run: %v", err)
		}
		if state, _, by := approvalLine(t, a, r.Meta); state != "approved" || strings.Join(by, ",") != b.me+",user:ann" {
			t.Errorf("A's audit line: approval %s by %v", state, by)
		}
	})

	t.Run("A killed with a call parked: abandoned on B", func(t *testing.T) {
		cctx, stop := context.WithCancel(ctx)
		done := mcpCallAsync(cctx, cs, "delete_file", `{"path":"notes.md"}`)
		req := b.pending(t, "delete_file")
		// The host and its plugins at once, as a node that dies.
		if err := syscall.Kill(-a.run.cmd.Process.Pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-a.run.done
		stop()
		recvWithin(t, ctx, done, "the killed call's end")
		var got admin.ApprovalRequest
		testkit.Eventually(60*time.Second, func() bool {
			var state string
			state, got = b.requestState(t, req.ID)
			return state != "pending"
		})
		if got.State != "abandoned" || !strings.Contains(got.Reason, req.Holder) {
			t.Fatalf("B shows the killed replica's request as %+v", got)
		}
		out, stderr, code := cli(t, "approvals", "approve", req.ID, "-c", b.config)
		if code != exitFailed || !strings.Contains(stderr, "is abandoned") || !strings.Contains(stderr, "can no longer be answered") {
			t.Errorf("approving an abandoned request: exit %d %q %s", code, out, stderr)
		}
		list, _, _ := cli(t, "approvals", "list", "-c", b.config)
		if !regexp.MustCompile(regexp.QuoteMeta(req.ID) + `\s+abandoned\s+delete_file`).MatchString(list) {
			t.Errorf("host approvals list on B:\n%s", list)
		}
	})
}

// consoleApprove signs in to the console at base with an API key,
// approves request id there and returns the page it is sent back to.
func consoleApprove(t *testing.T, base, key, id, argsSHA256 string) string {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	c := &http.Client{Jar: jar, Transport: tr}
	get := func(path string) string {
		resp, err := c.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	post := func(path string, form url.Values) (int, string) {
		resp, err := c.PostForm(base+path, form)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`)
	m := csrf.FindStringSubmatch(get("/signin"))
	if m == nil {
		t.Fatal("the sign-in form has no CSRF token")
	}
	if code, _ := post("/signin", url.Values{"credential": {key}, "csrf": {m[1]}}); code != http.StatusOK {
		t.Fatalf("console sign-in: %d", code)
	}
	page := get("/approvals")
	if !strings.Contains(page, id) {
		t.Fatalf("the console does not list %s:\n%s", id, page)
	}
	tok := csrf.FindStringSubmatch(page)
	if tok == nil {
		t.Fatal("the approvals page has no CSRF token")
	}
	code, body := post("/approvals/"+id+"/approve", url.Values{"csrf": {tok[1]}, "args_sha256": {argsSHA256}})
	if code != http.StatusOK {
		t.Fatalf("console approve: %d\n%s", code, body)
	}
	return body
}
