package mcpserver

import (
	"net/http"
	"reflect"
	"testing"
)

// FuzzHotHTTPCall: whatever POST body (with its Mcp-Name header) the HTTP
// hot path takes, the SDK reads as the same tools/call, with the same id,
// name, arguments and _meta, and would accept its _meta: the 2026-07-28
// protocol version, client capabilities it decodes, no progress token, the
// header's name.
func FuzzHotHTTPCall(f *testing.F) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"echo","arguments":{"text":"hello"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"echo",` + meta + `,"arguments":null}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5}},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null},"name":"echo"}}`,
	} {
		f.Add([]byte(s), "echo")
	}
	f.Fuzz(func(t *testing.T, body []byte, name string) {
		h := http.Header{}
		h.Set("Mcp-Name", name)
		var s Server
		id, p, ok := s.plainStatelessCall(h, body)
		if !ok {
			return // the SDK's to read
		}
		want := sdkReadsCall(t, body, id)
		if want.Name != p.Name || want.Name != h.Get("Mcp-Name") || !reflect.DeepEqual(want.Meta, p.Meta) ||
			want.RequestState != "" || want.InputResponses != nil {
			t.Fatalf("params read as %+v; the SDK reads %+v", p, want)
		}
		sdkTakesNewMeta(t, want)
		if _, ok := want.Meta["progressToken"]; ok {
			t.Fatal("taken with a progress token")
		}
	})
}
