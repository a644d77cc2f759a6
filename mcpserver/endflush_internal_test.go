package mcpserver

import (
	"bytes"
	"encoding/json"
	"testing"
)

// TestIsResponseEvent: only a whole event whose data is a JSON-RPC
// response is held back; a request, a notification, a key of a nested
// value and anything unreadable are flushed as written.
func TestIsResponseEvent(t *testing.T) {
	for _, c := range []struct {
		event string
		want  bool
	}{
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n\n", true},
		{"event: message\nid: 7\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"a\",\"error\":{\"code\":-1,\"message\":\"m\"}}\n\n", true},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{\"result\":1}}\n\n", false},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"elicitation/create\",\"params\":{}}\n\n", false},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"params\":{\"result\":{},\"error\":1}}\n\n", false},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"a\":\"}\\\"method\\\":\"}}\n\n", true},
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}\n", false},               // not a whole event
		{"event: message\ndata: {\"id\":2,\ndata: \"result\":{}}\n\n", false},                         // data over two lines
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}\n\n", false},              // unbalanced
		{"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":\"unterminated}\n\n", false}, // open string
		{"event: message\ndata: [{\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{}}]\n\n", false},           // a batch
		{": keep-alive\n\n", false},
	} {
		if got := isResponseEvent([]byte(c.event)); got != c.want {
			t.Errorf("isResponseEvent(%q) = %v, want %v", c.event, got, c.want)
		}
	}
}

// FuzzTopLevelKeys: for any valid JSON object, the scan finds exactly the
// top-level keys encoding/json finds.
func FuzzTopLevelKeys(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":1,"result":{"method":1}}`,
		`{"method":"x","params":{"error":{}}}`,
		`{"error":{"code":1},"a":["result",{"method":2}]}`,
		`{"a\"method":1,"b":"\\","result":null}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		var m map[string]json.RawMessage
		if json.Unmarshal(b, &m) != nil || m == nil || len(b) == 0 || b[0] != '{' || b[len(b)-1] != '}' {
			return // the scan is only asked about objects the SDK wrote
		}
		want := 0
		for k, bit := range map[string]int{"method": keyMethod, "result": keyResult, "error": keyError} {
			if _, ok := m[k]; ok {
				want |= bit
			}
		}
		got, ok := topLevelKeys(b)
		if !ok && bytes.IndexByte(b, '\\') >= 0 {
			return // an escaped key: not told, so flushed as written
		}
		if !ok || got != want {
			t.Fatalf("topLevelKeys(%q) = %b, %v; encoding/json finds %b", b, got, ok, want)
		}
	})
}
