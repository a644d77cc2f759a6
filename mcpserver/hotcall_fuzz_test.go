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

// FuzzHotCallDecode: whatever line the hot path takes as a tools/call, the
// SDK reads the same: a request of tools/call with the same id, and params
// with the same name, arguments and _meta.
func FuzzHotCallDecode(f *testing.F) {
	for _, s := range []string{
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}`,
		`{"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"_meta":{"progressToken":1},"name":"a\u00e9","arguments":null}}`,
		`{"id":-7,"params":{"name":"n","name":"m"},"method":"tools/call","jsonrpc":"2.0"}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"Name":"echo"}}`,
		`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","_meta":null}}`,
		"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\\ud800x\",\"_meta\":{\"k\":\"\xfe\"}}}",
		`{"jsonrpc":"2.0","id":9007199254740993,"method":"tools/call","params":{"name":"big"}}`,
		`{"jsonrpc":"2.0","id":"\u0041","method":"tools/call","params":{"name":"esc"}}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, line []byte) {
		id, p, ok := decodeHotCall(line)
		if !ok {
			return // the SDK's to read
		}
		msg, err := jsonrpc.DecodeMessage(line)
		if err != nil {
			t.Fatalf("taken, but the SDK cannot read it: %v", err)
		}
		req, isReq := msg.(*jsonrpc.Request)
		if !isReq || req.Method != "tools/call" || req.ID != id || !req.IsCall() {
			t.Fatalf("taken as a call with id %v; the SDK reads %#v", id, msg)
		}
		want, err := sdkParams(req.Params)
		if err != nil {
			t.Fatalf("taken, but the SDK cannot read its params: %v", err)
		}
		if want.Name != p.Name || !bytes.Equal(want.Arguments, p.Arguments) || !reflect.DeepEqual(want.Meta, p.Meta) ||
			want.RequestState != "" || want.InputResponses != nil {
			t.Fatalf("params read as %+v; the SDK reads %+v", p, want)
		}
	})
}
