package mcpserver_test

import (
	"bufio"
	"context"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

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
	r.send(t, initBody)
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
	} {
		want := perCall.ReplaceAllString(sdk.send(t, line), `-`)
		got := perCall.ReplaceAllString(hot.send(t, line), `-`)
		if got != want {
			t.Errorf("%s\n hot path: %s\n      SDK: %s", line, got, want)
		}
	}
}

// TestHotCallCancelled: a notifications/cancelled naming a call the hot
// path serves cancels it (the tool sees its context end).
func TestHotCallCancelled(t *testing.T) {
	leakCheck(t)
	f := newFixture(t, time.Minute)
	hot := openRawStdio(t, f.srv, true)
	if _, err := io.WriteString(hot.in, `{"jsonrpc":"2.0","id":"w1","method":"tools/call","params":{"name":"wait"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	<-f.demo.started
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
}

// BenchmarkMCPStdioFrontEnd is the server's side alone of a tools/call
// over stdio: a raw client writes the request line and reads the answer
// line, to the hot path (ServeStdio, as `host mcp` serves) and to the SDK
// (ServeStdio without the hot path), in one run. Its B/op is what the front
// end and the pipeline allocate per call:
//
//	go test -run '^$' -bench MCPStdioFrontEnd -benchmem ./mcpserver/
func BenchmarkMCPStdioFrontEnd(b *testing.B) {
	line := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`
	for _, c := range []struct {
		name string
		hot  bool
	}{{"sdk", false}, {"hot-path", true}} {
		b.Run(c.name, func(b *testing.B) {
			f := newFixture(b, 5*time.Second)
			r := openRawStdio(b, f.srv, c.hot)
			b.ReportAllocs()
			for b.Loop() {
				if a := r.send(b, line); !strings.Contains(a, `"text":"hello"`) {
					b.Fatal(a)
				}
			}
		})
	}
}
