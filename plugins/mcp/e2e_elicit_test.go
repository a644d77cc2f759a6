package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// A bridged server's elicitation/create during a call reaches the MCP client
// that made the call, through the real binaries, and the client's answer
// reaches the server; a client that cannot answer has it declined.

// everythingBlock is the npm server-everything behind the bridge, as "ev".
func everythingBlock(t *testing.T) string {
	return fmt.Sprintf(`
plugin "everything" {
  path = %q
  config {
    command = [%q]
    prefix  = "ev"
    trust_hints = true
  }
}
`, bin("plugins/mcp"), npmServer(t, "mcp-server-everything"))
}

// elicitUser answers each elicitation with the next of its answers and
// keeps what it was asked.
type elicitUser struct {
	mu      sync.Mutex
	asked   []*mcp.ElicitParams
	answers []*mcp.ElicitResult
}

func (u *elicitUser) handle(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.asked = append(u.asked, req.Params)
	if len(u.answers) == 0 {
		return nil, fmt.Errorf("asked more than the test expected: %q", req.Params.Message)
	}
	a := u.answers[0]
	u.answers = u.answers[1:]
	return a, nil
}

func (u *elicitUser) questions() []*mcp.ElicitParams {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]*mcp.ElicitParams(nil), u.asked...)
}

// elicitHostMCP starts `host mcp` with config and connects client to it over
// stdio, speaking protocol version; it ends with the test.
func elicitHostMCP(t *testing.T, ctx context.Context, config string, client *mcp.Client, version string) (*mcp.ClientSession, *testkit.Buffer) {
	t.Helper()
	cmd := exec.Command(bin("host"), "mcp", "-c", config)
	hostLog := &testkit.Buffer{}
	cmd.Stderr = hostLog
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect to host mcp: %v\n%s", err, hostLog)
	}
	if v := cs.InitializeResult().ProtocolVersion; v != version {
		t.Fatalf("negotiated %s, want %s", v, version)
	}
	t.Cleanup(func() { _ = cs.Close() })
	waitFor(t, 60*time.Second, "the server's elicitation tools", func() bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tool := range res.Tools {
			if tool.Name == "ev_trigger-elicitation-request" || tool.Name == "ev_trigger-url-elicitation" {
				n++
			}
		}
		return n == 2
	}, hostLog.String)
	return cs, hostLog
}

// allText is the text of a tool result's content, joined.
func allText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
			b.WriteString("\n")
		}
	}
	return b.String()
}

func TestElicitationPassedThrough(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, everythingBlock(t))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	call := func(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v", tool, err, res)
		}
		return allText(res)
	}

	t.Run("a client with elicitation is asked", func(t *testing.T) {
		user := &elicitUser{answers: []*mcp.ElicitResult{
			{Action: "accept", Content: map[string]any{"name": "Ann Example", "check": true}},
			{Action: "accept"},
			{Action: "decline"},
		}}
		client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: user.handle,
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
				Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
			}},
		})
		cs, hostLog := elicitHostMCP(t, ctx, config, client, "2025-11-25")

		// Form mode: the server's form reaches the client, the client's
		// content reaches the server, whose result repeats it.
		got := call(t, cs, "ev_trigger-elicitation-request", map[string]any{})
		if !strings.Contains(got, "- Name: Ann Example") || !strings.Contains(got, "- Agreed to terms: true") {
			t.Errorf("form: the server's result does not carry the client's answer:\n%s\nhost log:\n%s", got, hostLog)
		}
		// URL mode.
		got = call(t, cs, "ev_trigger-url-elicitation", map[string]any{"url": "https://example.com/consent"})
		if !strings.Contains(got, "User completed the URL elicitation flow") {
			t.Errorf("url: %s", got)
		}
		// A decline reaches the server as a decline.
		got = call(t, cs, "ev_trigger-elicitation-request", map[string]any{})
		if !strings.Contains(got, "User declined") {
			t.Errorf("decline: %s", got)
		}

		q := user.questions()
		if len(q) != 3 {
			t.Fatalf("the client was asked %d questions, want 3: %+v", len(q), q)
		}
		if q[0].Mode != "form" || !strings.Contains(q[0].Message, "Please provide inputs") || q[0].RequestedSchema == nil {
			t.Errorf("form question as the client got it: %+v", q[0])
		}
		if q[1].Mode != "url" || q[1].URL != "https://example.com/consent" || q[1].ElicitationID == "" {
			t.Errorf("url question as the client got it: %+v", q[1])
		}
		_ = cs.Close()
		// The host says that questions were asked and how they were
		// answered, never what was answered.
		log := hostLog.String()
		if n := strings.Count(log, "elicitation answered"); n != 3 {
			t.Errorf("%d lines of answered elicitations in the host's log, want 3:\n%s", n, log)
		}
		if strings.Contains(log, "Ann Example") {
			t.Errorf("the host's log carries the content of an answer:\n%s", log)
		}
	})

	declined := func(t *testing.T, cs *mcp.ClientSession, hostLog *testkit.Buffer) {
		t.Helper()
		got := call(t, cs, "ev_trigger-elicitation-request", map[string]any{})
		if !strings.Contains(got, "User declined") {
			t.Errorf("form to a client without elicitation: %s\nhost log:\n%s", got, hostLog)
		}
		got = call(t, cs, "ev_trigger-url-elicitation", map[string]any{"url": "https://example.com/consent"})
		if !strings.Contains(got, "declined to open the URL") {
			t.Errorf("url to a client without elicitation: %s", got)
		}
	}
	t.Run("a client without elicitation has it declined", func(t *testing.T) {
		client := mcp.NewClient(&mcp.Implementation{Name: "plain", Version: "1"}, nil)
		cs, hostLog := elicitHostMCP(t, ctx, config, client, "2025-11-25")
		declined(t, cs, hostLog)
	})
	// A 2026-07-28 client is not sent elicitation/create: the question is
	// the call's input-required result, and the client's retry carries the
	// answer to the call, which waits for it (over stdio, with a session).
	t.Run("a 2026-07-28 client answers in its retry", func(t *testing.T) {
		user := &elicitUser{answers: []*mcp.ElicitResult{
			{Action: "accept", Content: map[string]any{"name": "Ann Example", "check": true}},
			{Action: "accept"},
		}}
		client := mcp.NewClient(&mcp.Implementation{Name: "new", Version: "1"}, &mcp.ClientOptions{
			ElicitationHandler: user.handle,
			Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
				Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
			}},
		})
		cs, hostLog := elicitHostMCP(t, ctx, config, client, "2026-07-28")
		if got := call(t, cs, "ev_trigger-elicitation-request", map[string]any{}); !strings.Contains(got, "- Name: Ann Example") {
			t.Errorf("form: the server's result does not carry the client's answer:\n%s\nhost log:\n%s", got, hostLog)
		}
		if got := call(t, cs, "ev_trigger-url-elicitation", map[string]any{"url": "https://example.com/consent"}); !strings.Contains(got, "User completed the URL elicitation flow") {
			t.Errorf("url: %s", got)
		}
		if q := user.questions(); len(q) != 2 || q[0].Mode != "form" || q[1].Mode != "url" {
			t.Errorf("a 2026-07-28 client was asked %+v, want a form and a URL", q)
		}
	})
	t.Run("a 2026-07-28 client without elicitation has it declined", func(t *testing.T) {
		client := mcp.NewClient(&mcp.Implementation{Name: "new-plain", Version: "1"}, nil)
		cs, hostLog := elicitHostMCP(t, ctx, config, client, "2026-07-28")
		declined(t, cs, hostLog)
	})
}

// TestElicitationOverHTTP: a session client over streamable HTTP that opens
// no stream of its own (no standalone SSE) gets the question on the stream
// of the call's request.
func TestElicitationOverHTTP(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, everythingBlock(t))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "host {\n") {
		t.Fatalf("no host block in %s", data)
	}
	if err := os.WriteFile(config, []byte(strings.Replace(string(data), "host {\n", "host {\n  mcp = \""+addr+"\"\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 2)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	user := &elicitUser{answers: []*mcp.ElicitResult{{Action: "accept", Content: map[string]any{"name": "Ann Example"}}}}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: user.handle})
	hc := &http.Client{Transport: &http.Transport{}}
	defer hc.CloseIdleConnections()
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: hc, DisableStandaloneSSE: true},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, h.log)
	}
	defer cs.Close()
	var res *mcp.CallToolResult
	waitFor(t, 60*time.Second, "the elicitation tool", func() bool {
		res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev_trigger-elicitation-request", Arguments: map[string]any{}})
		return err == nil && !res.IsError
	}, h.log.String)
	if got := allText(res); !strings.Contains(got, "- Name: Ann Example") {
		t.Errorf("the server's result does not carry the client's answer:\n%s\nhost log:\n%s", got, h.log)
	}
	if q := user.questions(); len(q) != 1 || q[0].Mode != "form" {
		t.Errorf("the client was asked %+v, want one form", q)
	}
}
