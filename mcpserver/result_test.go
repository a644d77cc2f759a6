package mcpserver

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/pipeline"
)

func TestMCPShapedValue(t *testing.T) {
	same := func(a, b []byte) bool {
		var x, y any
		return json.Unmarshal(a, &x) == nil && json.Unmarshal(b, &y) == nil && reflect.DeepEqual(x, y)
	}
	for _, tc := range []struct {
		name, value string
		served      bool // as the MCP result it describes, else as its JSON text
	}{
		{"content and structuredContent", `{"content":[{"type":"text","text":"hi"},{"type":"image","mimeType":"image/png","data":"AQ=="}],"structuredContent":{"n":1}}`, true},
		{"content only", `{"content":[{"type":"text","text":"hi"}]}`, true},
		{"empty content", `{"content":[]}`, true},
		{"another key", `{"content":[{"type":"text","text":"hi"}],"isError":true}`, false},
		{"content not a list", `{"content":"hi"}`, false},
		{"unknown block type", `{"content":[{"type":"nope"}]}`, false},
		{"no content", `{"structuredContent":{"n":1}}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := toolResult(pipeline.Result{ID: "c-1", OK: true, Value: json.RawMessage(tc.value)})
			if r.IsError || r.Meta["plugkit/id"] != "c-1" {
				t.Fatalf("result %+v", r)
			}
			raw, err := json.Marshal(r)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.served {
				txt, ok := r.Content[0].(*mcp.TextContent)
				if len(r.Content) != 1 || !ok || !same([]byte(txt.Text), []byte(tc.value)) {
					t.Errorf("served %s, want the value as JSON text", raw)
				}
				return
			}
			var in, out struct {
				Content           json.RawMessage `json:"content"`
				StructuredContent json.RawMessage `json:"structuredContent"`
			}
			if err := json.Unmarshal(raw, &out); err != nil {
				t.Fatal(err)
			}
			_ = json.Unmarshal([]byte(tc.value), &in)
			if !same(out.Content, in.Content) || (in.StructuredContent == nil) != (out.StructuredContent == nil) ||
				(in.StructuredContent != nil && !same(out.StructuredContent, in.StructuredContent)) {
				t.Errorf("served %s, want the server's result %s", raw, tc.value)
			}
		})
	}
}
