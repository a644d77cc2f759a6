package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// The MCP end-to-end tests point the SDK's own client at the real binary
// and the shipped plugins: `host mcp` launched as a client launches its
// tool servers, and `host run` serving streamable HTTP beside the admin
// socket.

// mcpUser answers the approval questions and records them.
type mcpUser struct {
	mu        sync.Mutex
	approve   bool
	questions []string
}

func (u *mcpUser) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.questions = append(u.questions, req.Params.Message)
	return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": u.approve}}, nil
}

func (u *mcpUser) will(approve bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.approve = approve
}

func (u *mcpUser) asked() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.questions)
}

func toolText(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

func mcpCall(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool, args string) *mcp.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("tools/call %s %s: %v", tool, args, err)
	}
	return r
}

// waitTools waits until tools/list names every tool of want.
func waitTools(t *testing.T, ctx context.Context, cs *mcp.ClientSession, want ...string) []*mcp.Tool {
	t.Helper()
	var res *mcp.ListToolsResult
	var names, missing []string
	if !testkit.Eventually(30*time.Second, func() bool {
		var err error
		if res, err = cs.ListTools(ctx, nil); err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		names = names[:0]
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		missing = slices.DeleteFunc(slices.Clone(want), func(n string) bool { return slices.Contains(names, n) })
		return len(missing) == 0
	}) {
		t.Fatalf("tools/list %v lacks %v", names, missing)
	}
	return res.Tools
}

var shippedTools = []string{"search", "read_file", "list_dir", "write_file", "delete_file"}

func TestMCPStdioEndToEnd(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	config := deploymentFile(t, dir)

	cmd := exec.Command(bins.Path("host"), "mcp", "-c", config)
	stderr := &testkit.Buffer{}
	cmd.Stderr = stderr
	user := &mcpUser{}
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-agent", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: user.handle})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to host mcp: %v\n%s", err, stderr)
	}
	closed := false
	defer func() {
		if !closed {
			_ = cs.Close()
		}
	}()
	calls := 0

	t.Run("tools/list", func(t *testing.T) {
		tools := waitTools(t, ctx, cs, shippedTools...)
		for _, tool := range tools {
			if tool.Name == "delete_file" {
				if a := tool.Annotations; a == nil || a.DestructiveHint == nil || !*a.DestructiveHint {
					t.Errorf("delete_file annotations %+v, want destructive", a)
				}
				if tool.Meta["plugkit/owner"] != "files" {
					t.Errorf("delete_file _meta %v", tool.Meta)
				}
			}
		}
	})
	t.Run("ok", func(t *testing.T) {
		r := mcpCall(t, ctx, cs, "read_file", `{"path":"notes.md"}`)
		calls++
		if r.IsError || !strings.Contains(toolText(r), "first notes") {
			t.Fatalf("read_file notes.md: isError %v %q", r.IsError, toolText(r))
		}
	})
	t.Run("DENIED by safety", func(t *testing.T) {
		r := mcpCall(t, ctx, cs, "read_file", `{"path":"../outside.txt"}`)
		calls++
		txt := toolText(r)
		if !r.IsError || !strings.HasPrefix(txt, "DENIED: ") || !strings.Contains(txt, "paths must stay inside the workspace") || !strings.HasSuffix(txt, " (decided by safety)") {
			t.Fatalf("read_file ../outside.txt: isError %v %q, want DENIED with the rule's reason, decided by safety", r.IsError, txt)
		}
	})
	t.Run("INVALID_ARGUMENTS", func(t *testing.T) {
		r := mcpCall(t, ctx, cs, "read_file", `{"path":5}`)
		calls++
		if !r.IsError || !strings.HasPrefix(toolText(r), "INVALID_ARGUMENTS: ") {
			t.Fatalf("read_file with a number: isError %v %q", r.IsError, toolText(r))
		}
	})
	t.Run("refused through elicitation", func(t *testing.T) {
		user.will(false)
		r := mcpCall(t, ctx, cs, "delete_file", `{"path":"todo.md"}`)
		calls++
		if !r.IsError || !strings.HasPrefix(toolText(r), "DENIED: approver host refused: delete_file is destructive") {
			t.Fatalf("delete_file refused: isError %v %q", r.IsError, toolText(r))
		}
		if _, err := os.Stat(filepath.Join(dir, "workspace", "todo.md")); err != nil {
			t.Errorf("the file was deleted: %v", err)
		}
		if q := user.asked(); len(q) != 1 || !strings.Contains(q[0], "delete_file") || !strings.Contains(q[0], "todo.md") {
			t.Errorf("the user was asked %q", q)
		}
	})
	t.Run("granted through elicitation", func(t *testing.T) {
		user.will(true)
		r := mcpCall(t, ctx, cs, "delete_file", `{"path":"todo.md"}`)
		calls++
		if r.IsError {
			t.Fatalf("delete_file granted: %q", toolText(r))
		}
		if _, err := os.Stat(filepath.Join(dir, "workspace", "todo.md")); !os.IsNotExist(err) {
			t.Errorf("the file is still there: %v", err)
		}
	})
	t.Run("UNKNOWN_TOOL is audited", func(t *testing.T) {
		// MCP's protocol error for an unknown tool, but only after the
		// pipeline saw the call: it is one audit line like any other.
		_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "nope", Arguments: json.RawMessage(`{}`)})
		calls++
		var werr *jsonrpc.Error
		if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams || werr.Message != "UNKNOWN_TOOL: no tool named nope" {
			t.Fatalf("tools/call nope: %v, want -32602 UNKNOWN_TOOL: no tool named nope", err)
		}
		var data map[string]any
		if err := json.Unmarshal(werr.Data, &data); err != nil || data["plugkit/id"] == nil {
			t.Errorf("error data %s (%v), want the call's plugkit/id", werr.Data, err)
		}
	})

	t.Run("the client closing stops the host", func(t *testing.T) {
		closed = true
		if err := cs.Close(); err != nil {
			t.Errorf("close: %v", err)
		}
		if code := cmd.ProcessState.ExitCode(); code != 0 {
			t.Errorf("host mcp exited %d\n%s", code, stderr)
		}
		// The logs went to stderr; stdout carried nothing but the protocol,
		// or the client could not have read it.
		if !strings.Contains(stderr.String(), "serving MCP on stdio") {
			t.Errorf("no log on stderr:\n%s", stderr)
		}
	})

	t.Run("the audit log names the session as the caller", func(t *testing.T) {
		data, err := os.ReadFile(filepath.Join(dir, "run", "audit", "audit.log"))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) != calls {
			t.Fatalf("audit log has %d lines for %d calls:\n%s", len(lines), calls, data)
		}
		unknown := 0
		for _, l := range lines {
			var rec struct{ Caller, Tool, Code string }
			if err := json.Unmarshal([]byte(l), &rec); err != nil || !strings.HasPrefix(rec.Caller, "mcp#") {
				t.Errorf("audit line %s: caller %q, want mcp#N", l, rec.Caller)
			}
			if rec.Tool == "nope" && rec.Code == "UNKNOWN_TOOL" {
				unknown++
			}
		}
		if unknown != 1 {
			t.Errorf("%d audit lines of the call to nope, want 1:\n%s", unknown, data)
		}
	})
}

// freeLoopbackAddr returns a loopback address with a port that was free.
func freeLoopbackAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestMCPHTTPEndToEnd(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	config := deploymentFile(t, dir)
	addr := freeLoopbackAddr(t)
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	withMCP := strings.Replace(string(data), "host {\n", "host {\n  mcp = \""+addr+"\"\n", 1)
	if err := os.WriteFile(config, []byte(withMCP), 0o644); err != nil {
		t.Fatal(err)
	}
	running := startHost(t, config, len(shippedPlugins))

	changed := make(chan struct{}, 16)
	user := &mcpUser{approve: true}
	httpClient := &http.Client{Transport: &http.Transport{}}
	defer httpClient.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler:     user.handle,
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: httpClient}, nil)
	if err != nil {
		t.Fatalf("connect to %s: %v\n%s", addr, err, running.stderr)
	}
	defer cs.Close()

	t.Run("tools/list and a call", func(t *testing.T) {
		waitTools(t, ctx, cs, shippedTools...)
		r := mcpCall(t, ctx, cs, "search", `{"q":"monotonic guard","limit":3}`)
		if r.IsError || !strings.Contains(toolText(r), "guard") {
			t.Fatalf("search: isError %v %q", r.IsError, toolText(r))
		}
	})
	t.Run("granted through elicitation", func(t *testing.T) {
		r := mcpCall(t, ctx, cs, "delete_file", `{"path":"todo.md"}`)
		if r.IsError || len(user.asked()) != 1 {
			t.Fatalf("delete_file: isError %v %q, asked %q", r.IsError, toolText(r), user.asked())
		}
	})
	t.Run("host reload tells the client the list changed", func(t *testing.T) {
		for len(changed) > 0 {
			<-changed
		}
		if out, stderr, code := cli(t, "reload", "files", "-c", config); code != 0 {
			t.Fatalf("host reload files: exit %d %s%s", code, out, stderr)
		}
		select {
		case <-changed:
		case <-time.After(30 * time.Second):
			t.Fatal("no notifications/tools/list_changed after the reload")
		}
		waitTools(t, ctx, cs, shippedTools...)
		if r := mcpCall(t, ctx, cs, "read_file", `{"path":"notes.md"}`); r.IsError {
			t.Fatalf("read_file after the reload: %q", toolText(r))
		}
	})
	t.Run("host stop ends the server", func(t *testing.T) {
		if _, stderr, code := cli(t, "stop", "-c", config); code != 0 {
			t.Fatalf("stop: exit %d %s", code, stderr)
		}
		select {
		case <-running.done:
			if running.err != nil {
				t.Fatalf("host run: %v\n%s", running.err, running.stderr)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("host run did not stop")
		}
		if !strings.Contains(running.stderr.String(), "serving MCP") {
			t.Errorf("host run did not say where it serves MCP:\n%s", running.stderr)
		}
	})
}
