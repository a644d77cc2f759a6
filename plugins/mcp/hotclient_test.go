package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzHotResultDecode: whatever tools/call result a server sends, the
// bridge's own decoding gives the value and error text the SDK's decoding
// gives (or, where the SDK cannot read it, fails too), and is left to the
// SDK's client (input required) when the SDK's decoding says so.
func FuzzHotResultDecode(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hello"}]}`,
		`{"content":[{"type":"text","text":"<&> \u2028 \"q\""}],"structuredContent":{"b":1,"a":[1.5,"x",null,true]},"_meta":{"k":"v"}}`,
		`{"content":[{"type":"text","text":"boom"}],"isError":true}`,
		`{"content":[{"type":"image","data":"aGk=","mimeType":"image/png"}]}`,
		`{"content":[{"type":"text","text":"a","annotations":{"priority":1}}]}`,
		`{"content":null,"structuredContent":null}`,
		`{"content":[],"structuredContent":12345678901234567890}`,
		`{"content":[{"type":"text","text":"x","type":"text"}]}`,
		`{"Content":[{"type":"text","text":"case"}]}`,
		`{}`,
		`{"content":[{"type":"text","text":"done"}],"resultType":"complete"}`,
		`{"content":[],"resultType":"input_required","inputRequests":{"go":{"method":"elicitation/create","params":{"mode":"form","message":"?"}}}}`,
		`{"content":[{"type":"text","text":"x"}],"resultType":"other"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if !json.Valid(raw) {
			return
		}
		var want mcp.CallToolResult
		werr := json.Unmarshal(raw, &want)
		got, gerr := decodeCallResult(raw)
		if werr != nil {
			if gerr == nil {
				if _, direct := decodeTextResult(raw); direct {
					t.Fatalf("the SDK cannot read %s (%v), the bridge read %+v", raw, werr, got)
				}
			}
			return
		}
		if gerr != nil {
			t.Fatalf("the SDK reads %s, the bridge cannot: %v", raw, gerr)
		}
		if callNeedsSDK(got) != callNeedsSDK(&want) {
			t.Fatalf("%s: left to the SDK's client %v, by the SDK's decoding %v", raw, callNeedsSDK(got), callNeedsSDK(&want))
		}
		if got.IsError != want.IsError || errorText(got) != errorText(&want) {
			t.Fatalf("%s: isError %v %q, the SDK's %v %q", raw, got.IsError, errorText(got), want.IsError, errorText(&want))
		}
		gv, gerr := resultValue(got)
		wv, werr := resultValue(&want)
		if (gerr == nil) != (werr == nil) || !bytes.Equal(gv, wv) {
			t.Fatalf("%s: value %s (%v), the SDK's %s (%v)", raw, gv, gerr, wv, werr)
		}
	})
}

// everythingSession connects, as the bridge does (commandTransport), to
// the npm everything server, which speaks 2025-11-25.
func everythingSession(t testing.TB) (*mcp.ClientSession, *hotClient) {
	t.Helper()
	ct := &commandTransport{cmd: exec.Command(npmServer(t, "mcp-server-everything")), terminate: 2 * time.Second, maxAnswer: 1 << 20}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if ok, modern := ct.hot.serves(cs); !ok || modern {
		t.Fatalf("negotiated %s: the hot path would not serve it", cs.InitializeResult().ProtocolVersion)
	}
	return cs, ct.hot
}

// TestHotClientAnswersAsTheSDK: against a real server, a call sent by the
// bridge's own client gives the value and error text the SDK's client
// gives, for a text result, a structured one, an error result, a result
// of other content (decoded by the SDK's types) and an unknown tool; and a
// cancelled call returns at once and leaves the session usable.
func TestHotClientAnswersAsTheSDK(t *testing.T) {
	noLeaks(t)
	cs, hot := everythingSession(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, p := range []*mcp.CallToolParams{
		{Name: "echo", Arguments: json.RawMessage(`{"message":"hello <&> \u2028"}`)},
		{Name: "get-sum", Arguments: json.RawMessage(`{"a":2,"b":3.5}`)},
		{Name: "get-structured-content", Arguments: json.RawMessage(`{"location":"New York"}`)},
		{Name: "get-tiny-image", Arguments: json.RawMessage(`{}`)},
		{Name: "get-annotated-message", Arguments: json.RawMessage(`{"messageType":"error","includeImage":true}`)},
		{Name: "get-resource-links", Arguments: json.RawMessage(`{"count":2}`)},
		{Name: "echo", Arguments: json.RawMessage(`{"message":5}`)},
		{Name: "no_such_tool", Arguments: json.RawMessage(`{}`)},
	} {
		want, werr := cs.CallTool(ctx, p)
		got, gerr := hot.call(ctx, p, false)
		sameAnswer(t, p.Name, got, gerr, want, werr)
	}
	cctx, ccancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() {
		_, err := hot.call(cctx, &mcp.CallToolParams{Name: "trigger-long-running-operation", Arguments: json.RawMessage(`{"duration":30,"steps":3}`)}, false)
		done <- err
	}()
	time.Sleep(200 * time.Millisecond)
	ccancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("cancelled call: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a cancelled call did not return")
	}
	if res, err := hot.call(ctx, &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"after"}`)}, false); err != nil || res.IsError {
		t.Fatalf("call after a cancelled one: %v %+v", err, res)
	}
}

// sameAnswer fails t unless the bridge's own client answered a call as the
// SDK's did: the same JSON-RPC error, or a result of the same value and
// error text that is not left to the SDK (input required).
func sameAnswer(t *testing.T, tool string, got *mcp.CallToolResult, gerr error, want *mcp.CallToolResult, werr error) {
	t.Helper()
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("%s: error %v, the SDK's %v", tool, gerr, werr)
	}
	if werr != nil {
		var gw, ww *jsonrpc.Error
		if !errors.As(gerr, &gw) || !errors.As(werr, &ww) || gw.Code != ww.Code || gw.Message != ww.Message {
			t.Fatalf("%s: error %v, the SDK's %v", tool, gerr, werr)
		}
		return
	}
	gv, _ := resultValue(got)
	wv, _ := resultValue(want)
	if !bytes.Equal(gv, wv) || got.IsError != want.IsError || errorText(got) != errorText(want) || callNeedsSDK(got) {
		t.Fatalf("%s: %s (isError %v), the SDK's %s (isError %v)", tool, gv, got.IsError, wv, want.IsError)
	}
}

// BenchmarkBridgeClientCall is the bridge's side of a tools/call to a
// stdio server (the npm everything server's echo): sent by the SDK's
// client and by the bridge's own, in one run. B/op is what this process
// allocates per call (the server is another process):
//
//	go test -run '^$' -bench BridgeClientCall -benchmem ./plugins/mcp/
func BenchmarkBridgeClientCall(b *testing.B) {
	cs, hot := everythingSession(b)
	ctx := context.Background()
	p := &mcp.CallToolParams{Name: "echo", Arguments: json.RawMessage(`{"message":"hello"}`)}
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
	b.Run("hot-path", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if res, err := hot.call(ctx, p, false); err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
}
