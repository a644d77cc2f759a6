package main

import (
	"encoding/json"
	"testing"
)

func TestShownEscapesHiddenCharacters(t *testing.T) {
	for _, c := range []struct{ in, want, text string }{
		{"read_file", "read_file", "read_file"},
		{"\x1b]0;owned\x07", `\x1b]0;owned\x07`, `\x1b]0;owned\x07`},
		{"a\rb\nc\td", `a\x0db\x0ac\x09d`, "a\\x0db\nc\td"},
		{"x\u009by\x7f", `x\u009by\x7f`, `x\u009by\x7f`},
		{"abc\u202edef\u2066\u200b", `abc\u202edef\u2066\u200b`, `abc\u202edef\u2066\u200b`},
		{"tag\U000E0041", `tag\U000e0041`, `tag\U000e0041`},
		{"bad\xff\xfe", `bad\xff\xfe`, `bad\xff\xfe`},
		{"ok \ufffd é 日本", "ok \ufffd é 日本", "ok \ufffd é 日本"},
	} {
		if got := shown(c.in); got != c.want {
			t.Errorf("shown(%q) = %q, want %q", c.in, got, c.want)
		}
		if got := shownText(c.in); got != c.text {
			t.Errorf("shownText(%q) = %q, want %q", c.in, got, c.text)
		}
	}
}

// jsonShown keeps the document's meaning: decoding the escaped JSON gives
// the same value back.
func TestJSONShownKeepsTheValue(t *testing.T) {
	in := map[string]string{"name": "a\u202eb\u009bc\x7fd\U000E0041e"}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	out := jsonShown(raw)
	if r, ok := firstHidden(string(out)); ok {
		t.Fatalf("jsonShown left %U in %s", r, out)
	}
	var back map[string]string
	if err := json.Unmarshal(out, &back); err != nil {
		t.Fatalf("jsonShown wrote invalid JSON %s: %v", out, err)
	}
	if back["name"] != in["name"] {
		t.Fatalf("jsonShown changed the value: %q, want %q", back["name"], in["name"])
	}
}

func firstHidden(s string) (rune, bool) {
	for _, r := range s {
		if hidden(r) && r != '\n' {
			return r, true
		}
	}
	return 0, false
}
