package mcpserver

import (
	"bytes"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	segjson "github.com/segmentio/encoding/json"
)

// sdkParams decodes params as the SDK does (its JSON package is segmentio's
// decoder with case-sensitive member names).
func sdkParams(raw []byte) (*mcp.CallToolParamsRaw, error) {
	var p mcp.CallToolParamsRaw
	d := segjson.NewDecoder(bytes.NewReader(raw))
	d.DontMatchCaseInsensitiveStructFields()
	if err := d.Decode(&p); err != nil {
		return nil, err
	}
	return &p, nil
}

// FuzzHotCallDecode: whatever line the stdio hot path takes as a
// tools/call, in a session of a legacy protocol or of 2026-07-28, the SDK
// reads the same: a request of tools/call with the same id, and params
// with the same name, arguments and _meta; and of that _meta, the SDK
// would read the request as of the session's protocol and accept it as it
// is (sdkTakesNewMeta).
func FuzzHotCallDecode(f *testing.F) {
	const meta = `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"t","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"_meta":{"progressToken":1},"name":"a\u00e9","arguments":null}}`,
		`{"id":-7,"params":{"name":"n","name":"m"},"method":"tools/call","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"echo"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":null}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\\ud800x\",\"_meta\":{\"k\":\"\xfe\"}}}",
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"big"}}`,
		`{"jsonrpc":"2.0","id":"\u0041","method":"tools/call","params":{"name":"esc"}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{` + meta + `,"name":"echo","arguments":{"text":"hello"}}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"roots":5}},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":null},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-29","io.modelcontextprotocol/clientCapabilities":{}},"name":"echo"}}`,
		`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"_meta":{"progressToken":"p","io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{"elicitation":{"form":{}}}},"name":"echo"}}`,
	} {
		f.Add([]byte(s), false)
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, line []byte, newSession bool) {
		version := "2025-11-25"
		if newSession {
			version = newProtocol
		}
		id, p, ok := plainStdioCall(line, version)
		if !ok {
			return // the SDK's to read
		}
		want := sdkReadsCall(t, line, id)
		if want.Name != p.Name || !bytes.Equal(want.Arguments, p.Arguments) || !reflect.DeepEqual(want.Meta, p.Meta) ||
			want.RequestState != "" || want.InputResponses != nil {
			t.Fatalf("params read as %+v; the SDK reads %+v", p, want)
		}
		if newSession {
			sdkTakesNewMeta(t, want)
		} else if v, ok := want.Meta[mcp.MetaKeyProtocolVersion].(string); ok && v >= newProtocol {
			t.Fatalf("taken in a legacy session with protocol version %q in _meta", v)
		}
	})
}

// sdkReadsCall is the params of msg as the SDK reads them; it fails t
// unless the SDK reads msg as a tools/call request with id.
func sdkReadsCall(t *testing.T, msg []byte, id jsonrpc.ID) *mcp.CallToolParamsRaw {
	t.Helper()
	m, err := jsonrpc.DecodeMessage(msg)
	if err != nil {
		t.Fatalf("taken, but the SDK cannot read it: %v", err)
	}
	req, isReq := m.(*jsonrpc.Request)
	if !isReq || req.Method != "tools/call" || req.ID != id || !req.IsCall() {
		t.Fatalf("taken as a call with id %v; the SDK reads %#v", id, m)
	}
	p, err := sdkParams(req.Params)
	if err != nil {
		t.Fatalf("taken, but the SDK cannot read its params: %v", err)
	}
	return p
}

// sdkTakesNewMeta fails t unless the SDK would serve a request with params
// p as one of the 2026-07-28 protocol and accept its _meta as it is
// (validateRequestMeta): that version, client capabilities and, when
// given, client info that it reads.
func sdkTakesNewMeta(t *testing.T, p *mcp.CallToolParamsRaw) {
	t.Helper()
	sdkReq := &mcp.CallToolRequest{Params: p}
	if v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string); v != newProtocol {
		t.Fatalf("taken with protocol version %q in _meta", v)
	}
	if sdkReq.ClientCapabilities() == nil {
		t.Fatal("taken, but the SDK finds no client capabilities in it")
	}
	if _, given := p.Meta[mcp.MetaKeyClientInfo]; given && sdkReq.ClientInfo() == nil {
		t.Fatal("taken, but the SDK cannot read its client info")
	}
}
