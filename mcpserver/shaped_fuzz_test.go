package mcpserver

import (
	"encoding/json"
	"testing"
)

// FuzzShapedMembers: for every valid JSON object, reading its member names
// from its bytes says what decoding it into a map says (when it says
// anything: a name with an escape is left to the map).
func FuzzShapedMembers(f *testing.F) {
	for _, s := range []string{
		`{"content":[{"type":"text","text":"hi"}]}`,
		`{"content":[],"structuredContent":{"a":1}}`,
		`{"content":[],"structuredContent":null}`,
		`{ "structuredContent" : [1] , "content" : [ ] }`,
		`{"content":{"content":[]}}`,
		`{"content":[],"isError":true}`,
		`{"content":[],"content":"x"}`,
		`{"content":"x","content":[]}`,
		`{"content":null}`,
		`{"c\u006fntent":[]}`,
		`{"structuredContent":{"content":[]}}`,
		`{"content":[{"x":"]}"}],"s":1}`,
		`{}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		var m map[string]json.RawMessage
		if len(v) == 0 || v[0] != '{' || json.Unmarshal(v, &m) != nil {
			return // mcpShaped reads only objects, and decodes them after
		}
		got, known := shapedMembers(v)
		if !known {
			return
		}
		if want := shapedByMap(v); got != want {
			t.Fatalf("%s: read from the bytes %v, from a map %v", v, got, want)
		}
	})
}

// BenchmarkShapedCheck is the shape check of a bridged echo's result
// (what every bridged call's result goes through), read from the bytes
// against decoded into a map, in one run:
//
//	go test -run '^$' -bench ShapedCheck -benchmem ./mcpserver/
func BenchmarkShapedCheck(b *testing.B) {
	v := []byte(`{"content":[{"type":"text","text":"Echo: hello from bench-peers"}],"structuredContent":{"echo":"hello from bench-peers"}}`)
	b.Run("map", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !shapedByMap(v) {
				b.Fatal("not shaped")
			}
		}
	})
	b.Run("bytes", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if ok, known := shapedMembers(v); !ok || !known {
				b.Fatal("not shaped")
			}
		}
	})
}
