package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/mcptestserver"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// requestLog keeps the tools/call requests written to a server.
type requestLog struct {
	io.WriteCloser
	mu    sync.Mutex
	calls [][]byte
}

func (l *requestLog) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(`"tools/call"`)) {
		l.mu.Lock()
		l.calls = append(l.calls, bytes.Clone(p))
		l.mu.Unlock()
	}
	return l.WriteCloser.Write(p)
}

// last is the last tools/call written, without its id.
func (l *requestLog) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.calls) == 0 {
		return ""
	}
	return requestID.ReplaceAllString(string(l.calls[len(l.calls)-1]), `"id":ID`)
}

var requestID = regexp.MustCompile(`"id":("[^"]*"|[0-9]+)`)

// modernSession connects client, through the bridge's own client beneath
// the SDK's transport (hotTransport, as commandTransport does), to the Go
// test server over pipes in this process, at the client's newest protocol.
func modernSession(t *testing.T, client *mcp.Client) (*mcp.ClientSession, *hotClient, *requestLog) {
	t.Helper()
	ctx := testkit.Context(t)
	fromServer, serverOut, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	serverIn, toServer, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	srv := mcptestserver.New(io.Discard)
	srv.Ask()
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: serverIn, Writer: serverOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	log := &requestLog{WriteCloser: toServer}
	hot, transport := hotTransport(fromServer, log, 1<<20)
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
		_ = fromServer.Close()
	})
	if _, modern := hot.serves(cs); !modern {
		t.Fatalf("negotiated %s, not a protocol of 2026-07-28 or later", cs.InitializeResult().ProtocolVersion)
	}
	return cs, hot, log
}

// TestHotClientModernAnswersAsTheSDK: in a session of 2026-07-28 or later,
// the bridge's own client serves tools/call once the SDK's first request
// has shown the protocol _meta; each request it writes is the SDK's, byte
// for byte but the id (the server checks the _meta), and each answer is
// read as the SDK reads it. A call the server answers with input required
// is the SDK's to go on with (callNeedsSDK), and the SDK's client then
// answers the question and gets the result.
func TestHotClientModernAnswersAsTheSDK(t *testing.T) {
	noLeaks(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"go": true}}, nil
		},
	})
	cs, hot, log := modernSession(t, client)
	ctx := testkit.Context(t)
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if ok, modern := hot.serves(cs); !ok || !modern {
		t.Fatalf("after the SDK's tools/list the bridge's client serves the session: %v, of the newer protocol: %v", ok, modern)
	}
	for _, p := range []*mcp.CallToolParams{
		{Name: "echo", Arguments: json.RawMessage(`{"message":"hello <&> \u2028"}`)},
		{Name: "echo", Arguments: json.RawMessage(`{"message":"traced"}`),
			Meta: mcp.Meta{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}},
		{Name: "fail", Arguments: json.RawMessage(`{}`)},
		{Name: "echo", Arguments: json.RawMessage(`{"message":5}`)},
		{Name: "no_such_tool", Arguments: json.RawMessage(`{}`)},
	} {
		// The SDK's client adds its _meta to the params it is given: each
		// client gets a copy.
		sdkParams := *p
		sdkParams.Meta = maps.Clone(p.Meta)
		want, werr := cs.CallTool(ctx, &sdkParams)
		sent := log.last()
		got, gerr := hot.call(ctx, p, true)
		if hotSent := log.last(); hotSent != sent {
			t.Fatalf("%s: the bridge wrote\n%s\nthe SDK\n%s", p.Name, hotSent, sent)
		}
		sameAnswer(t, p.Name, got, gerr, want, werr)
	}
	confirm := &mcp.CallToolParams{Name: "confirm", Arguments: json.RawMessage(`{}`)}
	got, err := hot.call(ctx, confirm, true)
	if err != nil || !callNeedsSDK(got) {
		t.Fatalf("a call answered with input required: %v %+v, want it left to the SDK", err, got)
	}
	if confirm.Meta != nil {
		t.Fatalf("the caller's params were changed: %v", confirm.Meta)
	}
	res, err := cs.CallTool(ctx, confirm)
	if err != nil || errorText(res) != "confirm: accept true" {
		t.Fatalf("the SDK's retry: %v %q", err, errorText(res))
	}
}

// TestModernServerThroughTheBridge: through the real binaries, a Go server
// of 2026-07-28 behind the bridge answers a plain call (the bridge's own
// client) and a call that asks its client a question first (input
// required, left to the SDK's client): the question reaches the MCP client
// that made the call, and its answer reaches the server.
func TestModernServerThroughTheBridge(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "modern" {
  path = %q
  config {
    command = [%q, "-ask"]
    prefix  = "go"
    tools { read_only = ["echo", "confirm"] }
  }
}
`, bin("plugins/mcp"), bin("mcp-test-server")))
	ctx := testkit.ContextFor(t, 3*time.Minute)
	user := &elicitUser{answers: []*mcp.ElicitResult{{Action: "accept", Content: map[string]any{"go": true}}}}
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: user.handle})
	cmd := exec.Command(bin("host"), "mcp", "-c", config)
	hostLog := &testkit.Buffer{}
	cmd.Stderr = hostLog
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to host mcp: %v\n%s", err, hostLog)
	}
	t.Cleanup(func() { _ = cs.Close() })
	call := func(tool string) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "hi"}})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v\n%s", tool, err, res, hostLog)
		}
		return strings.TrimSpace(allText(res))
	}
	waitFor(t, time.Minute, "the server's tools", func() bool {
		res, err := cs.ListTools(ctx, nil)
		return err == nil && slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == "go_confirm" })
	}, hostLog.String)
	if got := call("go_echo"); got != "Echo: hi" {
		t.Fatalf("go_echo: %q", got)
	}
	if got := call("go_confirm"); got != "confirm: accept true" {
		t.Fatalf("go_confirm: %q", got)
	}
	if q := user.questions(); len(q) != 1 || q[0].Message != "Go ahead?" {
		t.Fatalf("the client was asked %+v, want the server's one question", q)
	}
}

// BenchmarkBridgeClientCallModern is BenchmarkBridgeClientCall against the
// Go test server, which speaks 2026-07-28: the SDK's client and the
// bridge's own, in one run, on one session. B/op is this process's:
//
//	go test -run '^$' -bench BridgeClientCallModern -benchmem ./plugins/mcp/
func BenchmarkBridgeClientCallModern(b *testing.B) {
	needBinaries(b)
	ct := &commandTransport{cmd: exec.Command(bin("mcp-test-server")), terminate: 2 * time.Second, maxAnswer: 1 << 20}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		b.Fatal(err)
	}
	if ok, modern := ct.hot.serves(cs); !ok || !modern {
		b.Fatalf("the bridge's client does not serve this session (%s)", cs.InitializeResult().ProtocolVersion)
	}
	p := &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"hello"}`)}
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: p.Name, Arguments: p.Arguments}); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("hot-path", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err := ct.hot.call(ctx, p, true); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
}
