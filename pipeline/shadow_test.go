package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// shadowFixture loads a tool "write" and, in order: "asker" (stage 1: asks
// for every call of write), "rules" (two guards, rules deny_write and
// deny_secret, each noting its rule), "broken" (a pre-execute listener
// and a guard that fail) and an approver that refuses everything, so that
// an Ask not in shadow is a denial.
func shadowFixture(t *testing.T) (*kernel.Kernel, *pipeline.Tools, *int) {
	t.Helper()
	k, tools := newTools(t, pipeline.Options{})
	ran := new(int)
	load(t, k,
		fakePlugin{name: "files", tools: []pipeline.Tool{tool("write", func(context.Context, *pipeline.Execution) (any, error) {
			*ran++
			return "written", nil
		})}}.plugin(),
		fakePlugin{name: "asker", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			d := pipeline.Ask("may it write?")
			d.Rule = "ask_write"
			return d, nil
		}}.plugin(),
		fakePlugin{name: "rules", apply: func(reg *pipeline.Registrar) error {
			rule := func(name, needle string) pipeline.GuardFunc {
				return func(ctx context.Context, e *pipeline.Execution) (string, error) {
					pipeline.NoteRule(ctx, name)
					if strings.Contains(e.ArgumentsJSON(), needle) {
						return "denied by " + name, nil
					}
					return "", nil
				}
			}
			_, err1 := reg.Guard(rule("deny_write", "etc"))
			_, err2 := reg.Guard(rule("deny_secret", "secret"))
			return errors.Join(err1, err2)
		}}.plugin(),
		fakePlugin{name: "broken",
			pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				return pipeline.Decision{}, errors.New("listener down")
			},
			guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
				panic("guard down")
			},
		}.plugin(),
		fakePlugin{name: "approver", approver: func(context.Context, *pipeline.Execution, string) (bool, error) { return false, nil }}.plugin(),
	)
	return k, tools, ran
}

func shadowsOf(ds []pipeline.ShadowDecision) string {
	var parts []string
	for _, d := range ds {
		parts = append(parts, fmt.Sprintf("%d:%s/%s:%s", d.Stage, d.Plugin, d.Rule, d.Would))
	}
	return strings.Join(parts, " ")
}

// TestShadow: a listener in shadow is asked as usual; its Deny, Ask or
// failure is not applied but noted on the result, and Explain (which runs
// the same stage code) says the same, step by step.
func TestShadow(t *testing.T) {
	_, tools, ran := shadowFixture(t)
	canary := pipeline.Principal{ID: "ann", Kind: "user", Attributes: []string{"group:canary"}}
	bob := pipeline.Principal{ID: "bob", Kind: "user"}
	for _, tc := range []struct {
		name    string
		rules   []pipeline.ShadowRule
		who     pipeline.Principal
		args    string
		outcome string // the call's code, "" when it ran
		by      string
		explain string // Explain's outcome when it differs
		shadow  string
		steps   string
	}{
		{name: "nothing in shadow", args: `{"p":"/tmp"}`, outcome: "DENIED", by: "approver", explain: "ASK",
			steps: "asker:ask(ask_write)* broken:not reached rules:pass(deny_write) rules:pass(deny_secret) broken:failed"},
		{name: "whole plugins", rules: []pipeline.ShadowRule{{Plugin: "asker"}, {Plugin: "broken"}, {Plugin: "rules"}},
			args:   `{"p":"/etc/secret"}`,
			shadow: "1:asker/ask_write:ASK 1:broken/:DENIED 2:rules/deny_write:DENIED 2:rules/deny_secret:DENIED 2:broken/:DENIED",
			steps:  "asker:shadow ask(ask_write) broken:shadow failed rules:shadow deny(deny_write) rules:shadow deny(deny_secret) broken:shadow failed"},
		{name: "one rule", rules: []pipeline.ShadowRule{{Plugin: "asker"}, {Plugin: "broken"}, {Plugin: "rules", Rule: "deny_write"}},
			args: `{"p":"/etc/secret"}`, outcome: "DENIED", by: "rules",
			shadow: "1:asker/ask_write:ASK 1:broken/:DENIED 2:rules/deny_write:DENIED",
			steps:  "asker:shadow ask(ask_write) broken:shadow failed rules:shadow deny(deny_write) rules:deny(deny_secret)* broken:shadow failed"},
		{name: "a rule of another name is enforced", rules: []pipeline.ShadowRule{{Plugin: "asker"}, {Plugin: "broken"}, {Plugin: "rules", Rule: "nothing"}},
			args: `{"p":"/etc"}`, outcome: "DENIED", by: "rules",
			shadow: "1:asker/ask_write:ASK 1:broken/:DENIED",
			steps:  "asker:shadow ask(ask_write) broken:shadow failed rules:deny(deny_write)* rules:pass(deny_secret) broken:shadow failed"},
		{name: "canary enforces", rules: []pipeline.ShadowRule{{Plugin: "asker"}, {Plugin: "broken"}, {Plugin: "rules", EnforceFor: []string{"group:canary"}}},
			who: canary, args: `{"p":"/etc"}`, outcome: "DENIED", by: "rules",
			shadow: "1:asker/ask_write:ASK 1:broken/:DENIED",
			steps:  "asker:shadow ask(ask_write) broken:shadow failed rules:deny(deny_write)* rules:pass(deny_secret) broken:shadow failed"},
		{name: "canary shadows the rest", rules: []pipeline.ShadowRule{{Plugin: "asker"}, {Plugin: "broken"}, {Plugin: "rules", EnforceFor: []string{"group:canary"}}},
			who: bob, args: `{"p":"/etc"}`,
			shadow: "1:asker/ask_write:ASK 1:broken/:DENIED 2:rules/deny_write:DENIED 2:broken/:DENIED",
			steps:  "asker:shadow ask(ask_write) broken:shadow failed rules:shadow deny(deny_write) rules:pass(deny_secret) broken:shadow failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tools.SetShadow(tc.rules); err != nil {
				t.Fatal(err)
			}
			ctx := pipeline.WithPrincipal(testkit.Context(t), tc.who)
			before := *ran
			r := tools.Execute(ctx, "write", []byte(tc.args), "test")
			if got := string(r.Code()); got != tc.outcome || r.DecidedBy != tc.by {
				t.Fatalf("outcome %q by %q, want %q by %q (%+v)", got, r.DecidedBy, tc.outcome, tc.by, r.Error)
			}
			if tc.outcome == "" && *ran != before+1 {
				t.Fatal("the tool did not run")
			}
			if got := shadowsOf(r.Shadow); got != tc.shadow {
				t.Errorf("call's shadow:\n got %s\nwant %s", got, tc.shadow)
			}
			x := tools.Explain(ctx, "write", []byte(tc.args), "test")
			want, by := tc.outcome, tc.by
			switch {
			case tc.explain != "":
				want, by = tc.explain, "asker"
			case want == "":
				want = pipeline.WouldRun
			}
			if x.Outcome != want || x.DecidedBy != by {
				t.Errorf("explain: %s by %s, want %s by %s", x.Outcome, x.DecidedBy, want, by)
			}
			if got := shadowsOf(x.Shadow); got != tc.shadow {
				t.Errorf("explain's shadow:\n got %s\nwant %s", got, tc.shadow)
			}
			if got := stepsOf(x); got != tc.steps {
				t.Errorf("steps:\n got %s\nwant %s", got, tc.steps)
			}
		})
	}
}

// TestShadowWrapperPassesOn: a listener in shadow that called next and then
// denied anyway leaves the call to what next returned; one that handed
// back the inner chain's denial is not the one in shadow.
func TestShadowWrapperPassesOn(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	load(t, k,
		fakePlugin{name: "files", tools: []pipeline.Tool{tool("write", okBody("ok"))}}.plugin(),
		fakePlugin{name: "outer", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			if d := next(ctx); d.Verdict != pipeline.VerdictAllow {
				return d, nil
			}
			return pipeline.Deny("outer says no"), nil
		}}.plugin(),
		fakePlugin{name: "inner", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			if strings.Contains(e.ArgumentsJSON(), "inner") {
				return pipeline.Deny("inner says no"), nil
			}
			return next(ctx), nil
		}}.plugin(),
	)
	if err := tools.SetShadow([]pipeline.ShadowRule{{Plugin: "outer"}}); err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	if r := tools.Execute(ctx, "write", []byte(`{}`), "test"); !r.OK || shadowsOf(r.Shadow) != "1:outer/:DENIED" {
		t.Fatalf("outer in shadow: %+v %s", r.Error, shadowsOf(r.Shadow))
	}
	if r := tools.Execute(ctx, "write", []byte(`{"x":"inner"}`), "test"); r.Code() != pipeline.CodeDenied || r.DecidedBy != "inner" || r.Shadow != nil {
		t.Fatalf("inner's denial handed back: %+v by %s, shadow %s", r.Error, r.DecidedBy, shadowsOf(r.Shadow))
	}
	if err := tools.SetShadow(nil); err != nil {
		t.Fatal(err)
	}
	if r := tools.Execute(ctx, "write", []byte(`{}`), "test"); r.Code() != pipeline.CodeDenied || r.DecidedBy != "outer" {
		t.Fatalf("shadow ended: %+v by %s", r.Error, r.DecidedBy)
	}
}

// TestShadowConcurrentGuards: guards that run at once note their shadow
// decisions without a race, and a shadow denial does not stop the walk.
func TestShadowConcurrentGuards(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	deny := func(reason string) pipeline.GuardFunc {
		return func(ctx context.Context, e *pipeline.Execution) (string, error) {
			pipeline.NoteRule(ctx, reason)
			return reason, nil
		}
	}
	load(t, k,
		fakePlugin{name: "files", tools: []pipeline.Tool{tool("write", okBody("ok"))}}.plugin(),
		fakePlugin{name: "a", apply: func(reg *pipeline.Registrar) error {
			_, err1 := reg.ConcurrentGuard(deny("a1"))
			_, err2 := reg.ConcurrentGuard(deny("a2"))
			_, err3 := reg.StartedGuard(func(ctx context.Context, e *pipeline.Execution) func() (string, error) {
				pipeline.NoteRule(ctx, "a3")
				return func() (string, error) { return "a3", nil }
			})
			return errors.Join(err1, err2, err3)
		}}.plugin(),
	)
	if err := tools.SetShadow([]pipeline.ShadowRule{{Plugin: "a", Rule: "a1"}, {Plugin: "a", Rule: "a3"}}); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		r := tools.Execute(testkit.Context(t), "write", []byte(`{}`), "test")
		if r.Code() != pipeline.CodeDenied || r.Error.Message != "a2" {
			t.Fatalf("want a2's denial, got %+v", r.Error)
		}
	}
	if err := tools.SetShadow([]pipeline.ShadowRule{{Plugin: "a"}}); err != nil {
		t.Fatal(err)
	}
	r := tools.Execute(testkit.Context(t), "write", []byte(`{}`), "test")
	if !r.OK || len(r.Shadow) != 3 {
		t.Fatalf("all in shadow: %+v, shadow %s", r.Error, shadowsOf(r.Shadow))
	}
}
