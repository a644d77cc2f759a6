package main

import (
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func call(tool, args string) *sdk.Call {
	return &sdk.Call{Execution: sdk.Execution{ID: "c1", Name: tool, Arguments: json.RawMessage(args)}}
}

// firstDenial runs the guards as the host does: in registration order,
// skipping a guard whose interest filter leaves the tool out, and reports
// the first reason.
func firstDenial(t *testing.T, pol *policy, c *sdk.Call) string {
	t.Helper()
	for _, g := range pol.guards {
		if len(g.Tools) > 0 && !contains(g.Tools, c.Name) {
			continue
		}
		reason, err := g.Check(context.Background(), c)
		if err != nil {
			return "error: " + err.Error()
		}
		if reason != "" {
			return reason
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func mustCompile(t *testing.T, cfg Config) *policy {
	t.Helper()
	pol, err := compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return pol
}

func TestRules(t *testing.T) {
	secrets := Rule{Name: "no-secrets", Tools: []string{"read_file", "write_file"}, PathPrefix: []string{"secrets/", "/etc"}, Pattern: []string{"(?i)password"}}
	for _, tc := range []struct {
		name       string
		rules      []Rule
		tool, args string
		want       string // the reason; "" passes
	}{
		// path_prefix
		{name: "under a prefix", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"secrets/key"}`,
			want: `denied by safety rule "no-secrets": path "secrets/key" is under "secrets/"`},
		{name: "the prefix itself", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"secrets"}`,
			want: `denied by safety rule "no-secrets": path "secrets" is under "secrets/"`},
		{name: "an absolute prefix", rules: []Rule{secrets}, tool: "write_file", args: `{"path":"/etc/passwd","content":"x"}`,
			want: `denied by safety rule "no-secrets": path "/etc/passwd" is under "/etc"`},
		{name: "a prefix compares whole elements", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"/etcetera/x"}`},
		{name: "a sibling with a longer name", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"secrets-public/x"}`},
		{name: "outside every prefix", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"docs/readme.md"}`},
		// cleaning
		{name: "dot-dot is cleaned", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"a/../secrets/x"}`,
			want: `denied by safety rule "no-secrets": path "a/../secrets/x" is under "secrets/"`},
		{name: "dot and double slash are cleaned", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"./secrets//x"}`,
			want: `denied by safety rule "no-secrets": path "./secrets//x" is under "secrets/"`},
		{name: "dot-dot climbing into an absolute prefix", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"/opt/../etc/shadow"}`,
			want: `denied by safety rule "no-secrets": path "/opt/../etc/shadow" is under "/etc"`},
		{name: "a cleaned path that leaves the prefix", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"secrets/../docs/x"}`},
		// pattern
		{name: "a regexp", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"docs/PASSWORDS.txt"}`,
			want: `denied by safety rule "no-secrets": path "docs/PASSWORDS.txt" matches "(?i)password"`},
		{name: "a regexp sees the cleaned path too", rules: []Rule{{Name: "anchored", Pattern: []string{`^private/`}}},
			tool: "read_file", args: `{"path":"x/../private/a"}`,
			want: `denied by safety rule "anchored": path "x/../private/a" matches "^private/"`},
		{name: "a regexp that does not match", rules: []Rule{secrets}, tool: "read_file", args: `{"path":"docs/pass.txt"}`},
		// tool globs and exact names
		{name: "a tool the rule does not name", rules: []Rule{secrets}, tool: "delete_file", args: `{"path":"secrets/key"}`},
		{name: "a rule without tools applies to every tool", rules: []Rule{{Name: "all", PathPrefix: []string{"secrets"}}},
			tool: "anything", args: `{"path":"secrets/k"}`, want: `denied by safety rule "all": path "secrets/k" is under "secrets"`},
		{name: "a tools-only rule denies outright", rules: []Rule{{Name: "no-shell", Tools: []string{"shell*"}}},
			tool: "shell_exec", args: `{"command":"ls"}`, want: `denied by safety rule "no-shell": tool "shell_exec" matches "shell*"`},
		{name: "a glob that does not match", rules: []Rule{{Name: "no-shell", Tools: []string{"shell*"}}}, tool: "bash", args: `{}`},
		{name: "a class glob", rules: []Rule{{Name: "no-rw", Tools: []string{"[rw]*_file"}}}, tool: "write_file", args: `{}`,
			want: `denied by safety rule "no-rw": tool "write_file" matches "[rw]*_file"`},
		{name: "an exact name denies outright", rules: []Rule{{Name: "no-delete", Tools: []string{"delete_file"}}}, tool: "delete_file", args: `{"path":"a"}`,
			want: `denied by safety rule "no-delete": tool "delete_file" matches "delete_file"`},
		{name: "every tool on purpose", rules: []Rule{{Name: "lockdown", Tools: []string{"*"}}}, tool: "list_dir", args: `{}`,
			want: `denied by safety rule "lockdown": tool "list_dir" matches "*"`},
		// arguments
		{name: "path_prefix inspects path by default, not other arguments", rules: []Rule{{Name: "p", PathPrefix: []string{"secrets"}}},
			tool: "write_file", args: `{"path":"ok.txt","content":"secrets/x"}`},
		{name: "pattern inspects every argument by default", rules: []Rule{{Name: "no-secrets", Pattern: []string{"(?i)password"}}},
			tool: "hello", args: `{"name":"my password"}`, want: `denied by safety rule "no-secrets": name "my password" matches "(?i)password"`},
		{name: "pattern inspects nested strings by default", rules: []Rule{{Name: "no-secrets", Pattern: []string{"(?i)password"}}},
			tool: "t", args: `{"a":1,"meta":{"n":2,"tags":["x",{"k/~":"the password"}]}}`,
			want: `denied by safety rule "no-secrets": meta/tags/1/k~1~0 "the password" matches "(?i)password"`},
		{name: "pattern checks arguments in name order", rules: []Rule{{Name: "p", Pattern: []string{"x"}}},
			tool: "t", args: `{"b":"x2","a":"x1"}`, want: `denied by safety rule "p": a "x1" matches "x"`},
		{name: "arguments narrows a pattern", rules: []Rule{{Name: "p", Arguments: []string{"path"}, Pattern: []string{"(?i)password"}}},
			tool: "write_file", args: `{"path":"ok.txt","content":"password=1"}`},
		{name: "a credential is never quoted in a reason", rules: []Rule{{Name: "p", Pattern: []string{"(?i)key"}}},
			tool: "t", args: `{"c":"key AKIA2E3MZXQ7RVBN4KTC"}`, want: `denied by safety rule "p": c "key [redacted: aws-access-key]" matches "(?i)key"`},
		{name: "named arguments are inspected", rules: []Rule{{Name: "cmd", Arguments: []string{"command", "cwd"}, Pattern: []string{`\brm\b`}}},
			tool: "shell", args: `{"command":"rm -rf x"}`, want: `denied by safety rule "cmd": command "rm -rf x" matches "\\brm\\b"`},
		{name: "every named argument is inspected", rules: []Rule{{Name: "two", Arguments: []string{"from", "to"}, PathPrefix: []string{"secrets"}}},
			tool: "move", args: `{"from":"a","to":"secrets/b"}`, want: `denied by safety rule "two": to "secrets/b" is under "secrets"`},
		{name: "string items of an array are inspected", rules: []Rule{{Name: "many", Arguments: []string{"paths"}, PathPrefix: []string{"secrets"}}},
			tool: "bulk", args: `{"paths":["a", 3, "secrets/c"]}`, want: `denied by safety rule "many": paths/2 "secrets/c" is under "secrets"`},
		{name: "a missing argument passes", rules: []Rule{secrets}, tool: "read_file", args: `{}`},
		{name: "a non-string argument passes", rules: []Rule{secrets}, tool: "read_file", args: `{"path":3}`},
		{name: "strings nested in an argument are inspected", rules: []Rule{secrets}, tool: "read_file", args: `{"path":{"p":"secrets/x"}}`,
			want: `denied by safety rule "no-secrets": path/p "secrets/x" is under "secrets/"`},
		{name: "arguments that are not an object fail closed", rules: []Rule{secrets}, tool: "read_file", args: `"secrets/x"`,
			want: `error: safety rule "no-secrets" cannot inspect the arguments of read_file: json: cannot unmarshal string into Go value of type map[string]json.RawMessage`},
		// reason
		{name: "the operator's reason", rules: []Rule{{Name: "no-secrets", PathPrefix: []string{"secrets/"}, Reason: "secrets are off limits"}},
			tool: "read_file", args: `{"path":"secrets/key"}`,
			want: `denied by safety rule "no-secrets": secrets are off limits (path "secrets/key" is under "secrets/")`},
		{name: "a long value is shortened", rules: []Rule{{Name: "long", PathPrefix: []string{"s"}}}, tool: "t",
			args: `{"path":"s/` + strings.Repeat("x", 200) + `"}`,
			want: `denied by safety rule "long": path "s/` + strings.Repeat("x", 118) + `…" is under "s"`},
		// order
		{name: "the first denying rule in file order is reported",
			rules: []Rule{{Name: "first", Pattern: []string{"key"}}, {Name: "second", PathPrefix: []string{"secrets"}}},
			tool:  "read_file", args: `{"path":"secrets/key"}`, want: `denied by safety rule "first": path "secrets/key" matches "key"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := mustCompile(t, Config{Deny: tc.rules})
			if got := firstDenial(t, pol, call(tc.tool, tc.args)); got != tc.want {
				t.Errorf("got  %s\nwant %s", got, tc.want)
			}
		})
	}
}

func TestUnder(t *testing.T) {
	for _, tc := range []struct {
		p, prefix string
		want      bool
	}{
		{"secrets", "secrets", true},
		{"secrets/a", "secrets", true},
		{"secretsx", "secrets", false},
		{"/etc/passwd", "/", true},
		{"etc/passwd", "/", false},
		{"a/b", ".", true},
		{".", ".", true},
		{"..", ".", false},
		{"../a", ".", false},
		{"..a", ".", true},
		{"/a", ".", false},
	} {
		t.Run(tc.p+" under "+tc.prefix, func(t *testing.T) {
			if got := under(tc.p, tc.prefix); got != tc.want {
				t.Errorf("got %v", got)
			}
		})
	}
}

// TestInterestFilter checks that a rule naming exact tools hands them to the
// host, which then skips the guard's RPC for other tools, and that a rule
// with any glob does not (the host filters by exact name only).
func TestInterestFilter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools []string
		want  []string
	}{
		{name: "exact names", tools: []string{"read_file", "write_file"}, want: []string{"read_file", "write_file"}},
		{name: "a star", tools: []string{"shell*"}},
		{name: "a question mark", tools: []string{"rea?_file"}},
		{name: "a class", tools: []string{"[rw]ead"}},
		{name: "an escape", tools: []string{`odd\*name`}},
		{name: "exact and glob mixed", tools: []string{"read_file", "shell*"}},
		{name: "no tools", tools: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol := mustCompile(t, Config{Deny: []Rule{{Name: "r", Tools: tc.tools, PathPrefix: []string{"x"}}}})
			if got := pol.guards[0].Tools; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Guard.Tools = %q, want %q", got, tc.want)
			}
			if pol.guards[0].Name != "r" {
				t.Errorf("Guard.Name = %q, want the rule's name", pol.guards[0].Name)
			}
		})
	}
	t.Run("the guard checks the tool itself too", func(t *testing.T) {
		// A host that ignored the filter must not widen the rule.
		pol := mustCompile(t, Config{Deny: []Rule{{Name: "r", Tools: []string{"read_file"}}}})
		if reason, _ := pol.guards[0].Check(context.Background(), call("delete_file", `{}`)); reason != "" {
			t.Errorf("denied another tool: %s", reason)
		}
	})
}

func TestCompileErrors(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		wants []string
	}{
		{name: "a bad regexp", cfg: Config{Deny: []Rule{{Name: "no-secrets", Pattern: []string{"ok", "(?i"}}}},
			wants: []string{`config: deny "no-secrets": pattern "(?i" is not a valid Go regular expression: invalid or unsupported Perl syntax: ` + "`(?i`"}},
		{name: "a Perl-only regexp", cfg: Config{Deny: []Rule{{Name: "look", Pattern: []string{`(?=x)`}}}},
			wants: []string{`deny "look": pattern "(?=x)" is not a valid Go regular expression`}},
		{name: "a bad glob", cfg: Config{Deny: []Rule{{Name: "no-shell", Tools: []string{"shell[", "ok"}}}},
			wants: []string{`config: deny "no-shell": tools "shell[" is not a valid glob pattern`}},
		{name: "an empty glob", cfg: Config{Deny: []Rule{{Name: "e", Tools: []string{""}}}},
			wants: []string{`deny "e": tools "" is not a valid glob pattern`}},
		{name: "a rule that names nothing", cfg: Config{Deny: []Rule{{Name: "vague", Reason: "why"}}},
			wants: []string{`deny "vague": the rule denies nothing in particular: set tools, path_prefix, pattern, url_hosts, resources or prompts`}},
		{name: "arguments without a check", cfg: Config{Deny: []Rule{{Name: "args", Tools: []string{"x"}, Arguments: []string{"cmd"}}}},
			wants: []string{`deny "args": arguments is set but there is no path_prefix, pattern or url_hosts`}},
		{name: "an empty prefix", cfg: Config{Deny: []Rule{{Name: "p", PathPrefix: []string{""}}}},
			wants: []string{`deny "p": path_prefix has an empty entry`}},
		{name: "an empty argument name", cfg: Config{Deny: []Rule{{Name: "a", Arguments: []string{""}, Pattern: []string{"x"}}}},
			wants: []string{`deny "a": arguments has an empty name`}},
		{name: "no name", cfg: Config{Deny: []Rule{{Tools: []string{"x"}}}},
			wants: []string{`deny rule #1: it has no name`}},
		{name: "two rules with one name", cfg: Config{Deny: []Rule{{Name: "twin", Tools: []string{"a"}}, {Name: "twin", Tools: []string{"b"}}}},
			wants: []string{`deny "twin": a second rule has this name`}},
		{name: "every problem at once", cfg: Config{Deny: []Rule{
			{Name: "one", Pattern: []string{"("}, Tools: []string{"["}},
			{Name: "two", Pattern: []string{"[z-a]"}},
		}}, wants: []string{`deny "one": tools "["`, `deny "one": pattern "("`, `deny "two": pattern "[z-a]"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pol, err := compile(tc.cfg)
			if err == nil {
				t.Fatalf("no error; policy %+v", pol)
			}
			for _, w := range tc.wants {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error\n  %s\ndoes not contain\n  %s", err, w)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error %q is not one line", err)
			}
		})
	}
}

func TestNoRules(t *testing.T) {
	pol := mustCompile(t, Config{})
	if len(pol.guards) != 0 || pol.ask != nil {
		t.Errorf("an empty config registers %d guards, ask %v", len(pol.guards), pol.ask != nil)
	}
}

func TestDefinition(t *testing.T) {
	p := newPlugin()
	if p.Name != "safety" || !reflect.DeepEqual(p.Inject, []string{"tools"}) || p.Apply == nil || p.ConfigSchema != configSchema {
		t.Errorf("definition: %+v", p)
	}
}

// TestCallerRules: a rule with callers applies only to the principals they
// name, one with not_callers to everyone else; the reason says whom the
// call was for.
func TestCallerRules(t *testing.T) {
	pol := mustCompile(t, Config{Deny: []Rule{
		{Name: "readers-read", Tools: []string{"write_*", "delete_*"}, Callers: []string{"group:readers"}},
		{Name: "admins-only", Tools: []string{"reindex"}, NotCallers: []string{"group:admins", "local:root"}},
	}})
	for _, c := range []struct {
		tool string
		who  sdk.Principal
		want string
	}{
		{"write_file", sdk.Principal{ID: "ann", Kind: "user", Attributes: []string{"group:readers"}},
			`denied by safety rule "readers-read": tool "write_file" matches "write_*", for user:ann`},
		{"read_file", sdk.Principal{ID: "ann", Kind: "user", Attributes: []string{"group:readers"}}, ""},
		{"write_file", sdk.Principal{ID: "bob", Kind: "user", Attributes: []string{"group:writers"}}, ""},
		{"write_file", sdk.Principal{}, ""},
		{"reindex", sdk.Principal{ID: "bob", Kind: "user", Attributes: []string{"group:writers"}},
			`denied by safety rule "admins-only": tool "reindex" matches "reindex", for user:bob`},
		{"reindex", sdk.Principal{}, `denied by safety rule "admins-only": tool "reindex" matches "reindex", for anonymous`},
		{"reindex", sdk.Principal{ID: "root", Kind: "local"}, ""},
		{"reindex", sdk.Principal{ID: "cy", Kind: "agent", Attributes: []string{"group:admins"}}, ""},
	} {
		cl := call(c.tool, `{}`)
		cl.Principal = c.who
		if got := firstDenial(t, pol, cl); got != c.want {
			t.Errorf("%s for %s: %q, want %q", c.tool, c.who, got, c.want)
		}
	}
	if _, err := compile(Config{Deny: []Rule{{Name: "x", Tools: []string{"*"}, Callers: []string{"readers"}}}}); err == nil || !strings.Contains(err.Error(), `caller "readers" is not a selector`) {
		t.Errorf("a caller without a colon: %v", err)
	}
}
