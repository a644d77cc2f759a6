package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/secrets"
)

func TestAskDestructive(t *testing.T) {
	pol := mustCompile(t, Config{AskDestructive: true})
	if pol.ask == nil {
		t.Fatal("ask_destructive registers no listener")
	}
	if len(pol.ask.Tools) != 0 {
		t.Errorf("the listener is limited to %q; it must see every tool, including later ones", pol.ask.Tools)
	}
	long := strings.Repeat("x", 200)
	for _, tc := range []struct {
		name        string
		destructive bool
		tool, args  string
		want        sdk.Decision
	}{
		{name: "a destructive tool is asked about", destructive: true, tool: "delete_file", args: `{"path":"a.txt"}`,
			want: ruled(sdk.Ask(`delete_file is destructive: allow this call? arguments: {path="a.txt"}`), askDestructiveRule)},
		{name: "arguments are sorted and shortened", destructive: true, tool: "write_file", args: `{"path":"notes/a.txt","content":"` + long + `"}`,
			want: ruled(sdk.Ask(`write_file is destructive: allow this call? arguments: {content="`+strings.Repeat("x", 79)+`…, path="notes/a.txt"}`), askDestructiveRule)},
		{name: "no arguments", destructive: true, tool: "reset", args: `{}`,
			want: ruled(sdk.Ask(`reset is destructive: allow this call? arguments: {}`), askDestructiveRule)},
		{name: "a read-only tool passes", tool: "read_file", args: `{"path":"a.txt"}`, want: sdk.Pass()},
		{name: "a tool without hints passes", tool: "search", args: `{"q":"x"}`, want: sdk.Pass()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &sdk.Call{Execution: sdk.Execution{ID: "c1", Name: tc.tool, Arguments: json.RawMessage(tc.args),
				Tool: sdk.ToolDescriptor{Name: tc.tool, Destructive: tc.destructive, ReadOnly: !tc.destructive}}}
			got, err := pol.ask.Filter(context.Background(), c)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	t.Run("off by default", func(t *testing.T) {
		if pol := mustCompile(t, Config{Deny: []Rule{{Name: "r", Tools: []string{"x"}}}}); pol.ask != nil {
			t.Error("a listener without ask_destructive")
		}
	})
}

func TestBriefArguments(t *testing.T) {
	for _, tc := range []struct{ name, raw, want string }{
		{"an object", `{ "b": 1, "a": [1, 2] }`, `{a=[1,2], b=1}`},
		{"not an object", `[1, 2]`, `[1,2]`},
		{"null", `null`, `null`},
		{"very many arguments are cut", `{` + manyArgs(100) + `}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := briefArguments(secrets.New(nil), json.RawMessage(tc.raw))
			if tc.want != "" && got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
			if n := len([]rune(got)); n > 401 {
				t.Errorf("%d runes, over the limit", n)
			}
		})
	}
}

func manyArgs(n int) string {
	parts := make([]string, n)
	for i := range parts {
		parts[i] = `"arg` + strings.Repeat("x", i%10) + string(rune('a'+i%26)) + `":"value"`
	}
	return strings.Join(parts, ",")
}

// ruled is d with the rule its listener reports (Decision.Rule).
func ruled(d sdk.Decision, rule string) sdk.Decision {
	d.Rule = rule
	return d
}
