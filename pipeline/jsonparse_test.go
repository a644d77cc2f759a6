package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// decodeStd is what parseJSON must agree with.
func decodeStd(raw []byte) (any, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

var jsonSeeds = []string{
	`{}`, `[]`, `{"a":2,"b":3}`, ` { "b" : [1, 2.5e-3, -0, true, false, null] , "a" : "x" } `,
	`"caf\u00e9 \ud83d\ude00 \ud800 \n\t\"\\\/"`, `-12.50E+10`, `0`, `{"a":{"b":{"c":[]}}}`,
	`{"a":1,"a":2}`, `01`, `1.`, `-`, `.5`, `{"a" 1}`, `[1,]`, `{"a":1,}`, `tru`, `nul`, `"\x"`,
	`"unterminated`, "\"ctl\x01\"", `{"a":1} x`, `[1] [2]`, "\xff\"", `"\xff"`, `1e`, `1e+`, `[`, `{`,
	`"\u12"`, `"\uD83D\u0041"`, `" \u0000 "`, `[[[[[[]]]]]]`, `{"":""}`,
	`{"a":{"b":1,"b":2}}`, `[{"p":1},{"p":1}]`, `{"p":1,"\u0070":2}`, `{"a":[{"x":0,"y":0,"x":1}]}`,
	`{"a":{"a":1}}`, `{"a":1,"b":{"a":2}}`,
}

func TestParseJSONAgreesWithEncodingJSON(t *testing.T) {
	for _, s := range jsonSeeds {
		t.Run(s, func(t *testing.T) { compareParsers(t, []byte(s)) })
	}
}

func FuzzParseJSON(f *testing.F) {
	for _, s := range jsonSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { compareParsers(t, raw) })
}

// hasDuplicateKey tells, with encoding/json's tokens, whether valid JSON
// raw has an object naming a key twice.
func hasDuplicateKey(raw []byte) bool {
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	type frame struct {
		keys   map[string]bool
		object bool
		key    bool // the next token of an object is a key
	}
	var stack []*frame
	for {
		tok, err := d.Token()
		if err == io.EOF {
			return false
		}
		if err != nil {
			panic(err) // raw is valid
		}
		var top *frame
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if top != nil && top.object && top.key {
			if k, ok := tok.(string); ok {
				if top.keys[k] {
					return true
				}
				top.keys[k] = true
				top.key = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			stack = append(stack, &frame{keys: map[string]bool{}, object: true, key: true})
			continue
		case json.Delim('['):
			stack = append(stack, &frame{})
			continue
		case json.Delim('}'), json.Delim(']'):
			stack = stack[:len(stack)-1]
		}
		// A value ended: its object expects a key next.
		if len(stack) > 0 && stack[len(stack)-1].object {
			stack[len(stack)-1].key = true
		}
	}
}

func compareParsers(t *testing.T, raw []byte) {
	t.Helper()
	want, ok := decodeStd(raw)
	got, err := parseJSON(raw)
	var dup *DuplicateKeyError
	if errors.As(err, &dup) {
		// Where encoding/json keeps the last value, stage 0 refuses. (In
		// input that is invalid further on, the duplicate may be what is
		// found first: either error refuses it.)
		if ok && !hasDuplicateKey(raw) {
			t.Fatalf("%q: parseJSON found duplicate key %q, which encoding/json's tokens do not show", raw, dup.Key)
		}
		return
	}
	if ok && hasDuplicateKey(raw) {
		t.Fatalf("%q: parseJSON accepted an object with a duplicate key (err %v)", raw, err)
	}
	if ok != (err == nil) {
		t.Fatalf("%q: encoding/json valid=%v, parseJSON err=%v", raw, ok, err)
	}
	if ok && !reflect.DeepEqual(got, want) {
		t.Fatalf("%q: parseJSON = %#v, encoding/json = %#v", raw, got, want)
	}
}

func TestParseJSONDepthLimit(t *testing.T) {
	deep := bytes.Repeat([]byte("["), maxDepth+1)
	if _, err := parseJSON(deep); err == nil {
		t.Fatal("no error for arguments nested too deeply")
	}
}

// TestDuplicateKeys: an object naming a key twice, at any depth and however
// the key is escaped, is refused in stage 0 with the key named.
func TestDuplicateKeys(t *testing.T) {
	reg, err := compile(Tool{ToolDescriptor: wire.ToolDescriptor{Name: "w", Description: "d"}, Execute: func(context.Context, *Execution) (any, error) { return nil, nil }}, "P", DefaultMaxDescriptionBytes)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, args, key string }{
		{"top", `{"path":"a","path":"/etc/passwd"}`, "path"},
		{"escaped", `{"path":"a","\u0070ath":"b"}`, "path"},
		{"nested", `{"o":{"x":[{"path":1,"path":2}]}}`, "path"},
		{"long", `{"` + strings.Repeat("k", 200) + `":1,"` + strings.Repeat("k", 200) + `":2}`, strings.Repeat("k", maxKeyShown) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, bad := checkArguments(reg, []byte(tc.args))
			want := "duplicate key " + string(appendString(nil, tc.key))
			if bad == nil || bad.Code != CodeInvalidArguments || !strings.HasPrefix(bad.Message, want) {
				t.Fatalf("checkArguments(%s) = %+v, want INVALID_ARGUMENTS %s", tc.args, bad, want)
			}
		})
	}
	for _, ok := range []string{`{"a":{"a":1}}`, `[{"p":1},{"p":2}]`} {
		if _, bad := checkArguments(reg, []byte(`{"v":`+ok+`}`)); bad != nil {
			t.Errorf("checkArguments(%s) = %+v, want it accepted (a key once per object)", ok, bad)
		}
	}
}

// parseJSON parses one JSON value into the shapes the schema validator
// reads (map[string]any, []any, json.Number, string, bool, nil), as
// encoding/json with UseNumber would. It exists because stage 0 runs on
// every call: it copies the input once and slices keys, strings without
// escapes and numbers out of that copy instead of allocating each.
func parseJSON(raw []byte) (any, error) {
	v, _, err := parseJSONText(raw)
	return v, err
}
