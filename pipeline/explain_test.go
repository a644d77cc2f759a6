package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// stepsOf renders an explanation's steps as "stage plugin verdict[*]" (*
// marks the decider), for comparing in one line.
func stepsOf(x pipeline.Explanation) string {
	var parts []string
	for _, s := range x.Steps {
		p := s.Plugin + ":" + s.Verdict
		if s.Rule != "" {
			p += "(" + s.Rule + ")"
		}
		if s.Decided {
			p += "*"
		}
		parts = append(parts, p)
	}
	return strings.Join(parts, " ")
}

// TestExplain checks what Explain reports for each way a call can go, and
// that nothing past stage 2 ever runs: no body, no stage-3 to 5 listener,
// no approver.
func TestExplain(t *testing.T) {
	var ran atomic.Int64
	counted := func(context.Context, *pipeline.Execution) (any, error) { ran.Add(1); return "ran", nil }
	k, tools := newTools(t, pipeline.Options{})
	var sawDryRun atomic.Bool
	load(t, k,
		fakePlugin{name: "files", tools: []pipeline.Tool{
			tool("read", counted),
			{ToolDescriptor: wire.ToolDescriptor{Name: "delete", Description: "Deletes.", Destructive: true}, Execute: counted},
			{ToolDescriptor: wire.ToolDescriptor{Name: "typed", Description: "Typed.", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}, Execute: counted},
		}}.plugin(),
		// Outermost: passes, unless the tool is destructive.
		fakePlugin{name: "asker", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			sawDryRun.Store(e.DryRun())
			if e.Tool().Destructive {
				d := pipeline.Ask("delete is destructive")
				d.Rule = "ask_destructive"
				return d, nil
			}
			return next(ctx), nil
		}}.plugin(),
		// An old plugin: not asked.
		fakePlugin{name: "old", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			if e.DryRun() {
				return pipeline.Decision{}, pipeline.ErrNotAsked
			}
			return next(ctx), nil
		}}.plugin(),
		fakePlugin{name: "only-typed", only: []string{"typed"}, guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
			return "", nil
		}}.plugin(),
		fakePlugin{name: "rules", guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
			pipeline.NoteRule(ctx, "no-secrets")
			if strings.Contains(e.ArgumentsJSON(), "secret") {
				return "secrets are off limits", nil
			}
			return "", nil
		}}.plugin(),
		fakePlugin{name: "second", guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
			if strings.Contains(e.ArgumentsJSON(), "secret") {
				return "also no", nil
			}
			return "", nil
		}}.plugin(),
		fakePlugin{name: "later",
			exec: func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
				ran.Add(1)
				return next(ctx)
			},
			post: func(ctx context.Context, e *pipeline.Execution, r pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
				ran.Add(1)
				return next(ctx), nil
			},
			result:   func(context.Context, *pipeline.Execution, pipeline.Result) error { ran.Add(1); return nil },
			approver: func(context.Context, *pipeline.Execution, string) (bool, error) { ran.Add(1); return true, nil },
		}.plugin(),
	)
	ctx := pipeline.WithPrincipal(testkit.Context(t), pipeline.Principal{ID: "alice", Kind: "local"})
	for _, tc := range []struct {
		name, tool, args string
		outcome, by      string
		rule, steps      string
		ifApproved       string
	}{
		{name: "would run", tool: "read", args: `{"path":"a"}`, outcome: pipeline.WouldRun,
			steps: "asker:pass old:not asked (does not support explain) only-typed:no interest rules:pass(no-secrets) second:pass"},
		{name: "a guard denies, the first one decides", tool: "read", args: `{"path":"secret"}`, outcome: pipeline.WouldDeny, by: "rules", rule: "no-secrets",
			steps: "asker:pass old:not asked (does not support explain) only-typed:no interest rules:deny(no-secrets)* second:deny"},
		{name: "stage 1 asks; the guards say what would follow", tool: "delete", args: `{"path":"secret"}`, outcome: pipeline.WouldAsk, by: "asker", rule: "ask_destructive",
			ifApproved: pipeline.WouldDeny,
			steps:      "asker:ask(ask_destructive)* old:not reached only-typed:no interest rules:deny(no-secrets) second:deny"},
		{name: "unknown tool", tool: "nope", args: `{}`, outcome: pipeline.NoSuchTool, by: "host"},
		{name: "invalid arguments", tool: "typed", args: `{"n":"x"}`, outcome: pipeline.BadArgs, by: "host"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := tools.Explain(ctx, tc.tool, json.RawMessage(tc.args), "cli")
			if x.Outcome != tc.outcome || x.DecidedBy != tc.by || x.Rule != tc.rule || x.IfApproved != tc.ifApproved {
				t.Errorf("got %+v", x)
			}
			if got := stepsOf(x); got != tc.steps {
				t.Errorf("steps:\n got %s\nwant %s", got, tc.steps)
			}
			if x.Principal != "local:alice" {
				t.Errorf("principal = %q", x.Principal)
			}
		})
	}
	if !sawDryRun.Load() {
		t.Error("the listener did not see the dry-run mark")
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d bodies, stage 3-5 listeners or approvers ran during explain", n)
	}
	// The same pipeline runs a real call: the mark is not left anywhere.
	wantCode(t, tools.Execute(ctx, "read", json.RawMessage(`{"path":"a"}`), "cli"), "")
	if sawDryRun.Load() {
		t.Error("a real call was marked dry run")
	}
}

// TestExplainNotAskedFailsOutsideDryRun: ErrNotAsked is only an answer to a
// dry run; from a real call it is a failed listener, and it denies.
func TestExplainNotAskedFailsOutsideDryRun(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	load(t, k,
		fakePlugin{name: "files", tools: []pipeline.Tool{tool("read", okBody(1))}}.plugin(),
		fakePlugin{name: "old", guard: func(context.Context, *pipeline.Execution) (string, error) { return "", pipeline.ErrNotAsked }}.plugin(),
	)
	wantCode(t, tools.Execute(testkit.Context(t), "read", nil, "cli"), pipeline.CodeDenied)
}

// TestExplainHeld: while a critical plugin is down, explain says the call
// would be denied, naming it.
func TestExplainHeld(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	load(t, k, fakePlugin{name: "files", tools: []pipeline.Tool{tool("read", okBody(1))}}.plugin())
	release := tools.Hold("safety", "critical plugin safety is not running")
	defer release()
	x := tools.Explain(testkit.Context(t), "read", nil, "cli")
	if x.Outcome != pipeline.WouldDeny || x.DecidedBy != "safety" {
		t.Errorf("got %+v", x)
	}
}

// TestExplainAgreesWithExecute: Explain runs the call's own stage functions,
// so for every way stages 0 to 2 can end, it reports the outcome, and who
// decided, that the call then gets. (A held tool was once explained as
// ALLOWED while its call failed as UNKNOWN_TOOL.)
func TestExplainAgreesWithExecute(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	load(t, k,
		fakePlugin{name: "files", tools: []pipeline.Tool{
			tool("read", okBody(1)),
			tool("secret", okBody(2)),
			{ToolDescriptor: wire.ToolDescriptor{Name: "held", Description: "Held.", Held: "its server does not list it"}, Execute: okBody(3)},
			{ToolDescriptor: wire.ToolDescriptor{Name: "typed", Description: "Typed.", Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`)}, Execute: okBody(4)},
			tool("panicky", okBody(5)),
		}}.plugin(),
		fakePlugin{name: "policy", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			switch e.Name() {
			case "secret":
				return pipeline.Deny("no secrets"), nil
			case "panicky":
				panic("listener bug")
			}
			return next(ctx), nil
		}}.plugin(),
		fakePlugin{name: "sizes", guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
			if strings.Contains(e.ArgumentsJSON(), "big") {
				return "too big", nil
			}
			return "", nil
		}}.plugin(),
	)
	ctx := testkit.Context(t)
	for _, tc := range []struct{ tool, args, want string }{
		{"read", `{}`, pipeline.WouldRun},
		{"read", `{"size":"big"}`, pipeline.WouldDeny},
		{"secret", `{}`, pipeline.WouldDeny},
		{"panicky", `{}`, pipeline.WouldDeny},
		{"held", `{}`, pipeline.NoSuchTool},
		{"nope", `{}`, pipeline.NoSuchTool},
		{"typed", `{"n":"x"}`, pipeline.BadArgs},
	} {
		x := tools.Explain(ctx, tc.tool, json.RawMessage(tc.args), "cli")
		r := tools.Execute(ctx, tc.tool, json.RawMessage(tc.args), "cli")
		got, by := pipeline.WouldRun, ""
		if r.Error != nil {
			got, by = string(r.Error.Code), r.DecidedBy
			if by == "" {
				by = "host"
			}
		}
		if x.Outcome != tc.want || got != tc.want {
			t.Errorf("%s %s: explained %s, called %s; want %s", tc.tool, tc.args, x.Outcome, got, tc.want)
		}
		if x.Outcome == got && x.DecidedBy != by {
			t.Errorf("%s %s: explained as decided by %q, the call by %q", tc.tool, tc.args, x.DecidedBy, by)
		}
		if r.Error != nil && x.Reason != r.Error.Message {
			t.Errorf("%s %s: explained reason %q, the call's %q", tc.tool, tc.args, x.Reason, r.Error.Message)
		}
	}
}
