package main

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// FuzzHotResultDecode: whatever tools/call result a server sends, the
// bridge's own decoding gives the value and error text the SDK's decoding
// gives (or, where the SDK cannot read it, fails too).
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
