package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

func kindCall(kind, tool, args string) *sdk.Call {
	c := call(tool, args)
	c.Tool = sdk.ToolDescriptor{Name: tool, Kind: kind}
	return c
}

func TestResourceAndPromptRules(t *testing.T) {
	pol := mustCompile(t, Config{Deny: []Rule{
		{Name: "no-static", Resources: []string{"demo://resource/static/*"}},
		{Name: "no-etc", Resources: []string{"file:///etc/*"}, Tools: []string{"fs_*"}},
		{Name: "no-greet", Prompts: []string{"*_prompts.greet"}, Reason: "greetings are poisoned"},
		{Name: "no-token-arg", Prompts: []string{"*"}, Pattern: []string{"secret"}},
	}})
	for _, tc := range []struct {
		call *sdk.Call
		want string // a part of the reason; "" for allowed
	}{
		{kindCall(sdk.KindResource, "ev_resources.read", `{"uri":"demo://resource/static/document/a/b.md"}`), `safety rule "no-static": resource "demo://resource/static/document/a/b.md" matches "demo://resource/static/*"`},
		{kindCall(sdk.KindResource, "ev_resources.read", `{"uri":"demo://resource/dynamic/text/1"}`), ""},
		{kindCall(sdk.KindResource, "fs_resources.read", `{"uri":"file:///etc/passwd"}`), `"no-etc"`},
		// The rule's tools narrow it further.
		{kindCall(sdk.KindResource, "other_resources.read", `{"uri":"file:///etc/passwd"}`), ""},
		// A read whose URI cannot be read fails closed.
		{kindCall(sdk.KindResource, "ev_resources.read", `{"uri":7}`), `names no URI`},
		// A tool call is not a read, whatever its arguments.
		{kindCall("", "ev_fetch", `{"uri":"demo://resource/static/x"}`), ""},
		{kindCall(sdk.KindPrompt, "h_prompts.greet", `{}`), `safety rule "no-greet": greetings are poisoned (prompt "h_prompts.greet" matches "*_prompts.greet")`},
		{kindCall(sdk.KindPrompt, "h_prompts.other", `{"x":"a secret"}`), `"no-token-arg"`},
		{kindCall(sdk.KindPrompt, "h_prompts.other", `{"x":"fine"}`), ""},
		// A prompts rule does not apply to a tool of the same name.
		{kindCall("", "h_prompts.greet", `{}`), ""},
	} {
		got := firstDenial(t, pol, tc.call)
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			args, _ := json.Marshal(tc.call.Arguments)
			t.Errorf("%s %s (kind %q): %q, want %q", tc.call.Name, args, tc.call.Tool.Kind, got, tc.want)
		}
	}
}

func TestResourceAndPromptRulesRefused(t *testing.T) {
	_, err := compile(Config{Deny: []Rule{{Name: "bad", Prompts: []string{"["}, Resources: []string{""}}}})
	if err == nil || !strings.Contains(err.Error(), `prompts "["`) || !strings.Contains(err.Error(), "resources has an empty entry") {
		t.Fatalf("compile: %v", err)
	}
}
