package mcpserver

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listResult is a tools/list result of tools named and described by the
// given strings, with envelope fields set as the SDK may set them.
func listResult(names, descs []string, schema json.RawMessage, cursor string, meta bool) *mcp.ListToolsResult {
	r := &mcp.ListToolsResult{NextCursor: cursor}
	r.CacheScope, r.TTLMs = "private", 30000
	if meta {
		r.Meta = mcp.Meta{"io.modelcontextprotocol/serverInfo": map[string]any{"name": "plugkit <&>", "version": "1"}}
	}
	f := false
	for i, n := range names {
		t := &mcp.Tool{Name: n, Description: descs[i%len(descs)], InputSchema: schema,
			Annotations: &mcp.ToolAnnotations{ReadOnlyHint: i%2 == 0, DestructiveHint: &f},
			Meta:        mcp.Meta{"plugkit/owner": descs[(i+1)%len(descs)]}}
		r.Tools = append(r.Tools, t)
	}
	return r
}

// sameAsSDK checks that the SDK's encoding of l (encoding/json calling
// its MarshalJSON) is byte for byte that of the plain result.
func sameAsSDK(t *testing.T, r *mcp.ListToolsResult, cache *toolJSON) {
	t.Helper()
	want, err := marshalLikeSDK(r)
	if err != nil {
		t.Fatal(err)
	}
	// Twice: the second time from the cache.
	for range 2 {
		got, err := marshalLikeSDK(&encodedList{ListToolsResult: r, cache: cache})
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encoded list differs from the SDK's encoding:\n got %s\nwant %s", got, want)
		}
	}
}

// TestEncodedListEqualsSDK: a tools/list page encoded from the cached
// encodings of its tools is what the SDK would have written, for pages
// with and without tools, cursors, _meta and characters encoding/json
// treats specially.
func TestEncodedListEqualsSDK(t *testing.T) {
	var cache toolJSON
	descs := []string{"plain", "<b>html</b> & more", "line\nbreak \u2028 \u2029 \"quoted\" \\ back", "ünïcödé 😀", ""}
	schema := json.RawMessage(`{ "type": "object", "properties": { "a<b": {"type":"string"} } }`)
	for _, c := range []struct {
		names  []string
		cursor string
		meta   bool
	}{
		{nil, "", false},
		{[]string{}, "next", true},
		{[]string{"one"}, "", false},
		{[]string{"a", "b_c", "d<e>&f", "ü"}, "Y3Vyc29y", true},
	} {
		r := listResult(c.names, descs, schema, c.cursor, c.meta)
		if c.names != nil && len(c.names) == 0 {
			r.Tools = []*mcp.Tool{}
		}
		sameAsSDK(t, r, &cache)
	}
	// Many tools, as a page holds.
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("tool_%04d", i)
	}
	sameAsSDK(t, listResult(names, descs, schema, "more", true), &cache)
}

// FuzzEncodedList: for any name, description and schema, the cached
// encoding of a page is the SDK's.
func FuzzEncodedList(f *testing.F) {
	f.Add("read_file", "Reads <a> file & more", `{"type":"object"}`, "cur")
	f.Add("x\u2028", "\"\\\x00", `{"properties":{"\u003c":{}}}`, "")
	f.Fuzz(func(t *testing.T, name, desc, schema, cursor string) {
		raw := json.RawMessage(schema)
		if !json.Valid(raw) {
			raw = nil
		}
		var cache toolJSON
		r := listResult([]string{name, name + "2"}, []string{desc, cursor}, raw, cursor, len(desc)%2 == 0)
		want, werr := marshalLikeSDK(r)
		got, gerr := marshalLikeSDK(&encodedList{ListToolsResult: r, cache: &cache})
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("errors differ: SDK %v, cached %v", werr, gerr)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("encoded list differs:\n got %s\nwant %s", got, want)
		}
	})
}

// BenchmarkListPageEncoding is the server's encoding of one tools/list
// page of 1,000 tools as the SDK writes it: the SDK's own encoding of the
// result against the page joined from cached encodings (what encoding/json
// then does with it included: it compacts a Marshaler's output).
//
//	go test -run '^$' -bench ListPageEncoding -benchmem ./mcpserver/
func BenchmarkListPageEncoding(b *testing.B) {
	names := make([]string, 1000)
	for i := range names {
		names[i] = fmt.Sprintf("tool_%04d", i)
	}
	schema := json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"the file"},"workspace":{"type":"string"}},"required":["path"]}`)
	r := listResult(names, []string{"Reads a file in the workspace. Needs the path; returns its text, with its owner and when it last changed."}, schema, "next", false)
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalLikeSDK(r); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cached", func(b *testing.B) {
		var cache toolJSON
		b.ReportAllocs()
		for b.Loop() {
			if _, err := marshalLikeSDK(&encodedList{ListToolsResult: r, cache: &cache}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
