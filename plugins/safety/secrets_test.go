package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/secrets/fake"
)

func secretsConfig(arguments, results string, allow ...string) Config {
	return Config{Secrets: []Secrets{{Arguments: arguments, Results: results, Allow: allow}}}
}

// mustNotLeak fails when any credential appears in s.
func mustNotLeak(t *testing.T, s string, creds ...string) {
	t.Helper()
	for _, c := range creds {
		if strings.Contains(s, c) {
			t.Errorf("%q holds the credential %q", s, c)
		}
	}
}

func TestSecretsArgumentsDeny(t *testing.T) {
	f := fake.New(11)
	aws, gh, slack := f.AWSAccessKey(), f.GitHubToken("ghp_"), f.SlackBotToken()
	pemKey := fake.RSAKey(t)
	pol := mustCompile(t, secretsConfig("", ""))
	if len(pol.guards) != 1 || pol.guards[0].Name != "secrets" || len(pol.guards[0].Tools) != 0 {
		t.Fatalf("guards %+v, want one secrets guard for every tool", pol.guards)
	}
	if pol.ask != nil {
		t.Error("a stage-1 listener without ask or ask_destructive")
	}
	args := func(v any) string { b, _ := json.Marshal(v); return string(b) }
	for _, tc := range []struct{ name, args, want string }{
		{"a key in content", args(map[string]any{"path": "a.txt", "content": "aws_access_key_id = " + aws + "\n"}),
			`denied by safety rule "secrets": the arguments carry a credential (aws-access-key in /content)`},
		{"nested in objects and arrays", args(map[string]any{"files": []any{map[string]any{"body": "ok"}, map[string]any{"body": "x " + gh}}}),
			`denied by safety rule "secrets": the arguments carry a credential (github-token in /files/1/body)`},
		{"a private key across lines", args(map[string]any{"content": "config:\n" + pemKey + "more\n"}),
			`denied by safety rule "secrets": the arguments carry a credential (private-key in /content)`},
		{"several kinds", args(map[string]any{"a": slack, "b": []string{aws, aws}, "c": aws}),
			`denied by safety rule "secrets": the arguments carry a credential (slack-token in /a; aws-access-key in /b/0, /b/1, /c)`},
		{"clean arguments pass", args(map[string]any{"path": "notes.md", "content": "password = hunter2"}), ``},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := firstDenial(t, pol, call("write_file", tc.args))
			if got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
			mustNotLeak(t, got, aws, gh, slack, pemKey[40:80])
		})
	}
	t.Run("arguments that are not JSON fail closed", func(t *testing.T) {
		if got := firstDenial(t, pol, call("t", `{"a":`)); !strings.HasPrefix(got, "error: ") {
			t.Errorf("got %q, want an error", got)
		}
	})
}

func TestSecretsAllowList(t *testing.T) {
	f := fake.New(12)
	known, other := f.AWSAccessKey(), f.AWSAccessKey()
	pol := mustCompile(t, secretsConfig("deny", "redact", known))
	if got := firstDenial(t, pol, call("t", `{"k":"`+known+`"}`)); got != "" {
		t.Errorf("an allowed fake is denied: %s", got)
	}
	if got := firstDenial(t, pol, call("t", `{"k":"`+known+` `+other+`"}`)); got == "" {
		t.Error("a key not on the allow list passes")
	}
	out := sdk.Outcome{OK: true, Value: json.RawMessage(`{"a":"` + known + `","b":"` + other + `"}`)}
	r, err := pol.review.Filter(context.Background(), call("t", `{}`), out)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":"` + known + `","b":"[redacted: aws-access-key]"}`; string(r.Value) != want {
		t.Errorf("redacted %s, want %s", r.Value, want)
	}
}

func TestSecretsStageOne(t *testing.T) {
	f := fake.New(13)
	aws := f.AWSAccessKey()
	withKey := `{"path":"a.txt","content":"` + aws + `"}`
	clean := `{"path":"a.txt","content":"hello"}`
	destructive := func(args string) *sdk.Call {
		c := call("write_file", args)
		c.Tool = sdk.ToolDescriptor{Name: "write_file", Destructive: true}
		return c
	}
	readOnly := func(args string) *sdk.Call {
		c := call("read_file", args)
		c.Tool = sdk.ToolDescriptor{Name: "read_file", ReadOnly: true}
		return c
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		call *sdk.Call
		want sdk.Decision
	}{
		{"deny beside ask_destructive denies before asking", Config{AskDestructive: true, Secrets: []Secrets{{}}}, destructive(withKey),
			ruled(sdk.Deny(`denied by safety rule "secrets": the arguments carry a credential (aws-access-key in /content)`), secretsName)},
		{"deny beside ask_destructive still asks about a clean destructive call", Config{AskDestructive: true, Secrets: []Secrets{{}}}, destructive(clean),
			ruled(sdk.Ask(`write_file is destructive: allow this call? arguments: {content="hello", path="a.txt"}`), askDestructiveRule)},
		{"ask asks, naming the kind", Config{Secrets: []Secrets{{Arguments: "ask"}}}, readOnly(withKey),
			ruled(sdk.Ask(`the arguments of read_file carry a credential (aws-access-key in /content): allow this call? arguments: {content="[redacted: aws-access-key]", path="a.txt"}`), secretsName)},
		{"ask and destructive make one question", Config{AskDestructive: true, Secrets: []Secrets{{Arguments: "ask"}}}, destructive(withKey),
			ruled(sdk.Ask(`write_file is destructive and its arguments carry a credential (aws-access-key in /content): allow this call? arguments: {content="[redacted: aws-access-key]", path="a.txt"}`), secretsName)},
		{"ask passes clean arguments", Config{Secrets: []Secrets{{Arguments: "ask"}}}, readOnly(clean), sdk.Pass()},
		{"a question never quotes a credential", Config{AskDestructive: true, Secrets: []Secrets{{Arguments: "off"}}}, destructive(withKey),
			ruled(sdk.Ask(`write_file is destructive: allow this call? arguments: {content="[redacted: aws-access-key]", path="a.txt"}`), askDestructiveRule)},
		{"ask_destructive without a secrets block redacts too", Config{AskDestructive: true}, destructive(withKey),
			ruled(sdk.Ask(`write_file is destructive: allow this call? arguments: {content="[redacted: aws-access-key]", path="a.txt"}`), askDestructiveRule)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := mustCompile(t, tc.cfg)
			if pol.ask == nil {
				t.Fatal("no stage-1 listener")
			}
			got, err := pol.ask.Filter(context.Background(), tc.call)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("got  %+v\nwant %+v", got, tc.want)
			}
		})
	}
	t.Run("ask registers no guard", func(t *testing.T) {
		if pol := mustCompile(t, secretsConfig("ask", "")); len(pol.guards) != 0 {
			t.Errorf("guards %+v: a guard would deny what the approver approved", pol.guards)
		}
	})
}

func TestSecretsResults(t *testing.T) {
	f := fake.New(14)
	aws, jwt := f.AWSAccessKey(), f.JWT()
	pemKey := fake.ECKey(t)
	pemJSON, _ := json.Marshal(pemKey)
	value := "{\n  \"path\": \"key.pem\",\n  \"content\": \"# a key\\n" + strings.Trim(string(pemJSON), `"`) +
		"# end\",\n  \"meta\": [1, {\"token\": \"" + jwt + "\"}, \"id " + aws + "\"],\n  \"size\": 12\n}"
	out := sdk.Outcome{OK: true, Value: json.RawMessage(value)}
	c := call("read_file", `{"path":"key.pem"}`)

	t.Run("redact replaces each credential and keeps every other byte", func(t *testing.T) {
		pol := mustCompile(t, secretsConfig("deny", "redact"))
		r, err := pol.review.Filter(context.Background(), c, out)
		if err != nil {
			t.Fatal(err)
		}
		want := "{\n  \"path\": \"key.pem\",\n  \"content\": \"# a key\\n[redacted: private-key]\\n# end\",\n  \"meta\": [1, {\"token\": \"[redacted: jwt]\"}, \"id [redacted: aws-access-key]\"],\n  \"size\": 12\n}"
		if !reflect.DeepEqual(r, sdk.Replace(json.RawMessage(want))) {
			t.Errorf("review %+v\nvalue\n%s\nwant\n%s", r, r.Value, want)
		}
	})
	t.Run("block names the kinds, never the credential", func(t *testing.T) {
		pol := mustCompile(t, secretsConfig("deny", "block"))
		r, err := pol.review.Filter(context.Background(), c, out)
		if err != nil {
			t.Fatal(err)
		}
		want := sdk.Block(`safety rule "secrets": the result of read_file carries a credential (private-key in /content; jwt in /meta/1/token; aws-access-key in /meta/2)`)
		if !reflect.DeepEqual(r, want) {
			t.Errorf("got  %+v\nwant %+v", r, want)
		}
		mustNotLeak(t, r.Feedback, aws, jwt)
	})
	t.Run("a clean result passes", func(t *testing.T) {
		for _, mode := range []string{"redact", "block"} {
			pol := mustCompile(t, secretsConfig("deny", mode))
			r, err := pol.review.Filter(context.Background(), c, sdk.Outcome{OK: true, Value: json.RawMessage(`{"a":"b"}`)})
			if err != nil || !reflect.DeepEqual(r, sdk.PassReview()) {
				t.Errorf("%s: %+v, %v", mode, r, err)
			}
		}
	})
	t.Run("an error message with a credential is blocked", func(t *testing.T) {
		pol := mustCompile(t, secretsConfig("deny", "redact"))
		r, err := pol.review.Filter(context.Background(), c, sdk.Failure("TOOL_ERROR", "login failed for "+aws))
		if err != nil {
			t.Fatal(err)
		}
		if want := sdk.Block(`safety rule "secrets": the error of read_file carries a credential (aws-access-key)`); !reflect.DeepEqual(r, want) {
			t.Errorf("got %+v", r)
		}
	})
	t.Run("off registers nothing", func(t *testing.T) {
		if pol := mustCompile(t, secretsConfig("off", "off")); pol.review != nil || len(pol.guards) != 0 || pol.ask != nil {
			t.Errorf("policy %+v", pol)
		}
	})
}

func TestSecretsCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"a bad arguments mode", secretsConfig("warn", ""), `secrets: arguments "warn" is not one of deny, ask, off`},
		{"a bad results mode", secretsConfig("", "mask"), `secrets: results "mask" is not one of redact, block, off`},
		{"an empty allow entry", secretsConfig("", "", "x", ""), `secrets: allow[1] is empty`},
		{"two blocks", Config{Secrets: []Secrets{{}, {}}}, `secrets: 2 blocks; write one`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := compile(tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}
