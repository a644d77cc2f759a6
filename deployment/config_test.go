package deployment

import (
	"encoding/json"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

func TestConfigJSON(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		body string
		want string
	}{
		{"empty", ``, `{}`},
		{"scalars", `
s = "x"
n = 1.5
i = 3
b = true
z = null`, `{"b":true,"i":3,"n":1.5,"s":"x","z":null}`},
		{"lists and objects", `
l = ["a", 1, false]
o = { k = "v", "with space" = [1] }
e = []`, `{"e":[],"l":["a",1,false],"o":{"k":"v","with space":[1]}}`},
		{"one block is an array", `
server { port = 80 }`, `{"server":[{"port":80}]}`},
		{"labelled blocks", `
rule "deny" { tool = "delete_*" }
rule "allow" { tool = "read_*" }
rule { tool = "x" }`, `{"rule":[{"name":"deny","tool":"delete_*"},{"name":"allow","tool":"read_*"},{"tool":"x"}]}`},
		{"nested blocks", `
a "x" {
  b {
    c = 1
  }
}`, `{"a":[{"b":[{"c":1}],"name":"x"}]}`},
		{"templates and arithmetic", `
s = "a-${1 + 1}"
m = 6 * 7`, `{"m":42,"s":"a-2"}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, diags := hclsyntax.ParseConfig([]byte(tc.body), "c.hcl", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(Format(diags))
			}
			raw, _, diags := configJSON(f.Body, hcl.Range{})
			if len(diags) > 0 {
				t.Fatal(Format(diags))
			}
			if string(raw) != tc.want {
				t.Errorf("configJSON = %s, want %s", raw, tc.want)
			}
			if !json.Valid(raw) {
				t.Errorf("not JSON: %s", raw)
			}
		})
	}
}

// TestConfigLocations checks where instance locations map back to.
func TestConfigLocations(t *testing.T) {
	t.Parallel()
	const body = `root = "x"
tags = ["a",
  "b"]
opts = { depth = 2 }
rule "deny" {
  tool = "delete_*"
}
rule {
  tool = "y"
}
`
	f, diags := hclsyntax.ParseConfig([]byte(body), "c.hcl", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatal(Format(diags))
	}
	def := hcl.Range{Filename: "c.hcl", Start: hcl.Pos{Line: 99, Column: 1}}
	_, src, diags := configJSON(f.Body, def)
	if len(diags) > 0 {
		t.Fatal(Format(diags))
	}
	for _, tc := range []struct {
		tokens    []string
		line, col int
	}{
		{nil, 99, 1},
		{[]string{"root"}, 1, 1},
		{[]string{"tags", "1"}, 3, 3},
		{[]string{"tags", "7"}, 2, 1}, // no such item: the nearest written ancestor
		{[]string{"opts", "depth"}, 4, 10},
		{[]string{"rule"}, 5, 1},
		{[]string{"rule", "0", "name"}, 5, 6},
		{[]string{"rule", "0", "tool"}, 6, 3},
		{[]string{"rule", "1"}, 8, 1},
		{[]string{"rule", "1", "missing"}, 8, 1},
		{[]string{"unknown"}, 99, 1},
	} {
		r := locate(src, tc.tokens, hcl.Range{})
		if r.Start.Line != tc.line || r.Start.Column != tc.col {
			t.Errorf("locate(%s) = %d:%d, want %d:%d", pointer(tc.tokens), r.Start.Line, r.Start.Column, tc.line, tc.col)
		}
	}
}

func TestPointerEscapes(t *testing.T) {
	t.Parallel()
	if got := pointer([]string{"a/b", "c~d", "0"}); got != "/a~1b/c~0d/0" {
		t.Errorf("pointer = %q", got)
	}
}
