package e2e

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askTodoRule is a safety ask rule that names route oncall for reads of
// todo.md: read_file is in no route's tools.
const askTodoRule = `
    ask "todo-reads" {
      tools       = ["read_file"]
      path_prefix = ["todo.md"]
      reason      = "the todo list is private"
      approval    = "oncall"
    }
`

// TestApprovalRouteNamedByRule: a safety rule whose action is ask names
// its approval route, and the Ask goes there although no route's tools
// pattern matches the tool: the MCP agent's call waits for the route's
// approvers, one approves with `host approvals approve`, the call runs.
// host explain names the route; host validate refuses a rule naming a
// route the deployment does not declare, at its line.
func TestApprovalRouteNamedByRule(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := startApprovalsHostWith(t, "", askTodoRule)

	out, _, code := cli(t, "explain", "-c", h.config, "read_file", `{"path":"todo.md"}`)
	if code != exitWouldAsk || !strings.Contains(out, `would ASK safety, rule "todo-reads": safety rule "todo-reads" asks: the todo list is private`) ||
		!strings.Contains(out, `asked of: route "oncall" (`+h.me+` or user:ann)`) {
		t.Errorf("host explain: exit %d\n%s", code, out)
	}
	// A read the rule does not match is not asked about.
	if out, _, code := cli(t, "explain", "-c", h.config, "read_file", `{"path":"notes.md"}`); code != exitOK {
		t.Errorf("host explain notes.md: exit %d\n%s", code, out)
	}

	cs := h.agent(t, ctx, nil)
	done := mcpCallAsync(ctx, cs, "read_file", `{"path":"todo.md"}`)
	req := h.pending(t, "read_file")
	if req.Route != "oncall" || req.Principal != "agent:ci-bot" || !strings.Contains(req.Question, `safety rule "todo-reads" asks`) {
		t.Fatalf("request = %+v", req)
	}
	if n := recvWithin(t, ctx, h.hooks, "the named route's webhook notification"); n.Request != req.ID || n.Route != "oncall" {
		t.Errorf("webhook notification = %+v", n)
	}
	if out, stderr, code := cli(t, "approvals", "approve", req.ID, "-c", h.config); code != 0 || !strings.Contains(out, "approved by "+h.me) {
		t.Fatalf("host approvals approve: exit %d %q %s", code, out, stderr)
	}
	r := recvWithin(t, ctx, done, "the approved call's result")
	if r.IsError || !strings.Contains(toolText(r), "write the tests") {
		t.Errorf("approved read: %s", toolText(r))
	}
	// Not matched by the rule, the read runs without anyone asked.
	if r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "notes.md"}}); err != nil || r.IsError {
		t.Errorf("read of notes.md: %v %s", err, toolText(r))
	}

	// The same rule naming an undeclared route: host validate says where.
	bad, err := os.ReadFile(h.config)
	if err != nil {
		t.Fatal(err)
	}
	badPath := filepath.Join(h.dir, "bad-route.hcl")
	text := strings.Replace(string(bad), `approval    = "oncall"`, `approval    = "on-call"`, 1)
	if err := os.WriteFile(badPath, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	line := 1 + strings.Count(text[:strings.Index(text, `approval    = "on-call"`)], "\n")
	_, stderr, code := cli(t, "validate", "-c", badPath)
	want := `Unknown approval route: Plugin "safety": rule "todo-reads" (config at /ask/0/approval) names approval route "on-call", which the deployment does not declare`
	if code == 0 || !strings.Contains(stderr, want) || !strings.Contains(stderr, filepath.Base(badPath)+":"+strconv.Itoa(line)+":") {
		t.Errorf("host validate of a rule naming an undeclared route: exit %d, want line %d\n%s", code, line, stderr)
	}
	// A reload of the running host's file checks it the same way, and
	// changes nothing.
	if err := os.WriteFile(h.config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := cli(t, "reload", "-c", h.config); code != 1 || !strings.Contains(stderr, want) {
		t.Errorf("host reload of a rule naming an undeclared route: exit %d\n%s", code, stderr)
	}
	if err := os.WriteFile(h.config, bad, 0o644); err != nil {
		t.Fatal(err)
	}
	if out, _, code := cli(t, "explain", "-c", h.config, "read_file", `{"path":"todo.md"}`); code != exitWouldAsk || !strings.Contains(out, `asked of: route "oncall"`) {
		t.Errorf("host explain after the refused reload: exit %d\n%s", code, out)
	}
}
