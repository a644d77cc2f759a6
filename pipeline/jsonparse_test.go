package pipeline

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
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

func compareParsers(t *testing.T, raw []byte) {
	t.Helper()
	want, ok := decodeStd(raw)
	got, err := parseJSON(raw)
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
