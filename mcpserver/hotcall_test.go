package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/mcpserver"
)

// rawStdio is a session of raw lines with srv over ServeStdio: tools/call
// by the hot path, or everything by the SDK.
type rawStdio struct {
	in    io.WriteCloser
	lines *bufio.Reader
	done  chan error
}

func openRawStdio(t testing.TB, srv *mcpserver.Server, hot bool) *rawStdio {
	t.Helper()
	return openRawStdioAt(t, srv, hot, "2025-11-25")
}

// discoverBody is how a 2026-07-28 client starts a stdio session: no
// handshake, a server/discover with the protocol in its _meta.
const discoverBody = `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{` + hotMeta + `}}`

// openRawStdioAt is openRawStdio for a client of protocol version: the
// legacy handshake before 2026-07-28, server/discover from it.
func openRawStdioAt(t testing.TB, srv *mcpserver.Server, hot bool, version string) *rawStdio {
	t.Helper()
	in, toServer := io.Pipe()
	fromServer, out := io.Pipe()
	r := &rawStdio{in: toServer, lines: bufio.NewReader(fromServer), done: make(chan error, 1)}
	go func() {
		var err error
		if hot {
			err = srv.ServeStdio(context.Background(), in, out)
		} else {
			err = srv.ServeStdioSDK(context.Background(), in, out)
		}
		out.Close()
		r.done <- err
	}()
	t.Cleanup(func() {
		toServer.Close()
		_, _ = io.Copy(io.Discard, fromServer)
		if err := <-r.done; err != nil {
			t.Errorf("serving raw stdio: %v", err)
		}
	})
	if version >= "2026-07-28" {
		if a := r.send(t, discoverBody); !strings.Contains(a, `"supportedVersions"`) {
			t.Fatalf("server/discover: %s", a)
		}
		return r
	}
	r.send(t, strings.Replace(initBody, "2025-11-25", version, 1))
	r.send(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return r
}

// send writes msg and returns the answer line when msg has an id.
func (r *rawStdio) send(t testing.TB, msg string) string {
	t.Helper()
	if _, err := io.WriteString(r.in, msg+"\n"); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(msg, `"id"`) {
		return ""
	}
	line, err := r.lines.ReadString('\n')
	if err != nil {
		t.Fatalf("reading the answer to %s: %v", msg, err)
	}
	return line
}

// perCall are the parts of an answer that differ from call to call: the
// call's id and its audit receipt.
var perCall = regexp.MustCompile(`"plugkit/id":"[^"]*"|"plugkit/receipt":\{[^}]*\}|\\"plugkit/id\\":\\"[^"\\]*\\"|mcp#[0-9]+`)

// TestHotCallsAnswerAsTheSDK: every tools/call answered by the stdio hot
// path is byte for byte what the SDK answers to the same line (the call's
// id and receipt aside), for results, denials, unknown and hidden tools,
// protocol errors, odd ids, _meta and characters JSON treats specially;
// and lines the hot path leaves to the SDK are answered as before.
func TestHotCallsAnswerAsTheSDK(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, time.Minute)
	sdk := openRawStdio(t, f.srv, false)
	hot := openRawStdio(t, f.srv, true)
	// The plain calls below the hot path serves; the others it leaves.
	const plain = 16
	defer func() {
		if n := f.srv.HotCalls(); n != plain {
			t.Errorf("the hot path served %d calls, want %d", n, plain)
		}
	}()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`,
		`{"jsonrpc":"2.0","id":"s-3","method":"tools/call","params":{"name":"echo","arguments":{"text":"<b>&amp;</b> \u2028 ü 😀 \"q\" \\"}}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"add","arguments":{"a":1.5,"b":2}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"secret"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"delete","arguments":{"text":"x"}}}`,
		`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"echo","arguments":{"text":5}}}`,
		`{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"echo","arguments":null}}`,
		`{"jsonrpc":"2.0","id":10,"method":"tools/call","params":{"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":11,"method":"tools/call","params":{"_meta":{"progressToken":"p1","traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"name":"echo","arguments":{"text":"m"}}}`,
		`{"jsonrpc":"2.0","id":1e30,"method":"tools/call","params":{"name":"echo","arguments":{"text":"odd id"}}}`,
		`{"jsonrpc":"2.0","id":12.5,"method":"tools/call","params":{"name":"echo","arguments":{"text":"odd id"}}}`,
		`{"jsonrpc":"2.0","id":-13,"method":"tools/call","params":{"name":"echo","arguments":{"text":"negative"}}}`,
		`{"id":14,"params":{"arguments":{"text":"order"},"name":"echo"},"method":"tools/call","jsonrpc":"2.0"}`,
		`  {"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"echo","arguments":{"text":"space before"}}}`,
		`{"jsonrpc":"2.0","id":15,"method":"tools/call","params":{"NAME":"echo","arguments":{"text":"case"}}}`,
		`{"jsonrpc":"2.0","id":16,"method":"tools/call","params":{"name":5}}`,
		`{"jsonrpc":"2.0","id":17,"method":"tools/call","params":{"name":""}}`,
		`{"jsonrpc":"2.0","id":18,"method":"tools/call"}`,
		`{"jsonrpc":"2.0","id":19,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"requestState":"nope"}}`,
		`{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":"echo","arguments":{"text":"x"},"extra":1}}`,
		`{"jsonrpc":"2.0","id":21,"method":"tools/call","params":{"name":"echo","name":"add","arguments":{"a":1,"b":1}}}`,
		`{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"wait"},"params":{"name":"echo","arguments":{"text":"dup"}}}`,
		`{"jsonrpc":"2.0","id":23,"method":"ping"}`,
		// A request of the 2026-07-28 protocol in a legacy session: the SDK
		// checks its _meta and names itself in the result.
		`{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{` + hotMeta + `,"name":"echo","arguments":{"text":"new meta"}}}`,
		`{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","arguments":{"text":"x"}}}`,
	} {
		want := perCall.ReplaceAllString(sdk.send(t, line), `-`)
		got := perCall.ReplaceAllString(hot.send(t, line), `-`)
		if got != want {
			t.Errorf("%s\n hot path: %s\n      SDK: %s", line, got, want)
		}
	}
}

// TestHotCallsAnswerAsTheSDKNewProtocol: as TestHotCallsAnswerAsTheSDK,
// in a session of the 2026-07-28 protocol (server/discover, no
// handshake), whose requests each carry their protocol in _meta: results
// with their resultType and the server's name, a denial, an Ask as an
// input-required result, unknown tools, bad arguments, odd ids; and the
// requests the hot path leaves to the SDK (_meta missing, odd or refused,
// a retry) answered as before.
func TestHotCallsAnswerAsTheSDKNewProtocol(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, time.Minute)
	sdk := openRawStdioAt(t, f.srv, false, "2026-07-28")
	hot := openRawStdioAt(t, f.srv, true, "2026-07-28")
	call := func(id, params string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/call","params":{` + params + `}}`
	}
	cases := []struct {
		line string
		hot  bool // the hot path serves it
	}{
		{call(`2`, hotMeta+`,"name":"echo","arguments":{"text":"hello"}`), true},
		{call(`"s-3"`, hotMeta+`,"name":"echo","arguments":{"text":"<b>&amp;</b> \u2028 ü 😀 \"q\" \\"}`), true},
		{call(`4`, `"name":"add","arguments":{"a":1.5,"b":2},`+hotMeta), true},
		{call(`5`, hotMeta+`,"name":"secret"`), true},
		{call(`6`, hotMeta+`,"name":"delete","arguments":{"text":"x"}`), true},
		{call(`7`, hotMetaElicit+`,"name":"delete","arguments":{"text":"x"}`), true},
		{call(`8`, hotMeta+`,"name":"no_such_tool","arguments":{}`), true},
		{call(`9`, hotMeta+`,"name":"echo","arguments":{"text":5}`), true},
		{call(`10`, hotMeta+`,"name":"echo","arguments":null`), true},
		{call(`11`, hotMeta+`,"name":"echo"`), true},
		{call(`-13`, hotMeta+`,"name":"echo","arguments":{"text":"negative"}`), true},
		{`{"id":14,"params":{"arguments":{"text":"order"},"name":"echo",` + hotMeta + `},"method":"tools/call","jsonrpc":"2.0"}`, true},
		{call(`15`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"name":"echo","arguments":{"text":"m"}`), true},
		{call(`16`, `"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"x"}`), true},
		// Ids the SDK would not keep exactly, which stdioIDs makes exact.
		{call(`1e30`, hotMeta+`,"name":"echo","arguments":{"text":"odd id"}`), true},
		{call(`12.5`, hotMeta+`,"name":"echo","arguments":{"text":"odd id"}`), true},
		{call(`17`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/serverInfo":{"name":"other","version":"0"}},"name":"echo","arguments":{"text":"x"}`), true},
		// Left to the SDK:
		{"  " + call(`18`, hotMeta+`,"name":"echo","arguments":{"text":"space before"}`), false},
		{call(`19`, `"name":"echo","arguments":{"text":"no meta"}`), false},
		{call(`20`, `"_meta":{"traceparent":"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"},"name":"echo","arguments":{"text":"no protocol"}`), false},
		{call(`21`, `"_meta":null,"name":"echo","arguments":{"text":"null meta"}`), false},
		{call(`22`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"echo","arguments":{"text":"no capabilities"}`), false},
		{call(`23`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":5},"name":"echo","arguments":{"text":"x"}`), false},
		{call(`24`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":"me"},"name":"echo","arguments":{"text":"x"}`), false},
		{call(`25`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2025-11-25","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"old version"}`), false},
		{call(`26`, `"_meta":{"io.modelcontextprotocol/protocolVersion":"2027-01-01","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"new version"}`), false},
		{call(`27`, `"_meta":{"io.modelcontextprotocol/protocolVersion":20260728,"io.modelcontextprotocol/clientCapabilities":{}},"name":"echo","arguments":{"text":"number"}`), false},
		{call(`28`, `"_meta":"2026-07-28","name":"echo","arguments":{"text":"string meta"}`), false},
		{call(`29`, hotMeta+`,"name":"echo","arguments":{"text":"x"},"requestState":"nope"`), false},
		{call(`30`, hotMeta+`,"NAME":"echo","arguments":{"text":"case"}`), false},
		{call(`31`, hotMeta+`,"name":5`), false},
		{`{"jsonrpc":"2.0","id":32,"method":"tools/call"}`, false},
	}
	want := int64(0)
	for _, c := range cases {
		if c.hot {
			want++
		}
	}
	before := f.srv.HotCalls()
	norm := func(s string) string { return statePerCall.ReplaceAllString(perCall.ReplaceAllString(s, `-`), `-`) }
	for _, c := range cases {
		w := norm(sdk.send(t, c.line))
		n := f.srv.HotCalls()
		g := norm(hot.send(t, c.line))
		if g != w {
			t.Errorf("%s\n hot path: %s\n      SDK: %s", c.line, g, w)
		}
		if taken := f.srv.HotCalls() > n; taken != c.hot {
			t.Errorf("%s: taken by the hot path %v, want %v", c.line, taken, c.hot)
		}
	}
	if got := f.srv.HotCalls() - before; got != want {
		t.Errorf("the hot path served %d calls, want %d", got, want)
	}
}

// TestHotCallsServeTheSDKClient: the SDK's own client, at its default
// protocol (2026-07-28) and at the last legacy one, has its tools/call
// served by the stdio hot path, with the answer it expects.
func TestHotCallsServeTheSDKClient(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, time.Minute)
	ctx := context.Background()
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		cs := connectStdio(t, ctx, f.srv, newClient(nil), version)
		before := f.srv.HotCalls()
		r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}})
		if err != nil || r.IsError || len(r.Content) != 1 {
			t.Fatalf("%s: tools/call: %v, %+v", version, err, r)
		}
		if text, _ := r.Content[0].(*mcp.TextContent); text == nil || text.Text != "hello" {
			t.Errorf("%s: content %#v", version, r.Content[0])
		}
		if n := f.srv.HotCalls() - before; n != 1 {
			t.Errorf("%s: the hot path served %d of the client's calls, want 1", version, n)
		}
		if err := cs.Close(); err != nil {
			t.Errorf("%s: close: %v", version, err)
		}
	}
}

// TestHotCallCancelled: a notifications/cancelled naming a call the hot
// path serves, in a session of either protocol, cancels it (the tool sees
// its context end).
func TestHotCallCancelled(t *testing.T) {
	for _, c := range []struct{ version, meta string }{{"2025-11-25", ""}, {"2026-07-28", hotMeta + ","}} {
		t.Run(c.version, func(t *testing.T) {
			leakCheck(t)
			f := newFixture(t, time.Minute)
			hot := openRawStdioAt(t, f.srv, true, c.version)
			if _, err := io.WriteString(hot.in, `{"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{`+c.meta+`"name":"wait"}}`+"\n"); err != nil {
				t.Fatal(err)
			}
			<-f.demo.started
			if n := f.srv.HotCalls(); n != 1 {
				t.Fatalf("the hot path served %d calls, want 1", n)
			}
			hot.send(t, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"w1","reason":"tools/call no longer wanted"}}`)
			select {
			case <-f.demo.cancelled:
			case <-time.After(10 * time.Second):
				t.Fatal("the call was not cancelled")
			}
			line, err := hot.lines.ReadString('\n')
			if err != nil || !strings.Contains(line, `"id":"w1"`) {
				t.Fatalf("answer of the cancelled call: %q, %v", line, err)
			}
		})
	}
}

// BenchmarkMCPStdioFrontEnd is the server's side alone of a tools/call
// over stdio: a raw client writes the request line and reads the answer
// line, to the hot path (ServeStdio, as `host mcp` serves) and to the SDK
// (ServeStdio without the hot path), in one run, in a session of the
// newest protocol (server/discover, the protocol in each request's _meta)
// and of the last legacy one. Its B/op is what the front end and the
// pipeline allocate per call; it fails if the hot path does not serve the
// calls it should:
//
//	go test -run '^$' -bench MCPStdioFrontEnd -benchmem ./mcpserver/
func BenchmarkMCPStdioFrontEnd(b *testing.B) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		line := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
		if version >= "2026-07-28" {
			line = `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + hotMeta + `,"name":"echo","arguments":{"text":"hello"}}}`
		}
		for _, c := range []struct {
			name string
			hot  bool
		}{{"sdk", false}, {"hot-path", true}} {
			b.Run(version+"/"+c.name, func(b *testing.B) {
				f := newFixture(b, 5*time.Second)
				r := openRawStdioAt(b, f.srv, c.hot, version)
				b.ReportAllocs()
				for b.Loop() {
					if a := r.send(b, line); !strings.Contains(a, `"text":"hello"`) {
						b.Fatal(a)
					}
				}
				b.StopTimer()
				if taken := f.srv.HotCalls() > 0; taken != c.hot {
					b.Fatalf("served by the hot path: %v, want %v", taken, c.hot)
				}
			})
		}
	}
}
