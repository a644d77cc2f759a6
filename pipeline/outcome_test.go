package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/pipeline/policy"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Every way a call can end, each in a fresh host: the code, the decider of
// every DENIED and BLOCKED, the call's id on the result, and stage 5 seeing
// the call exactly once with the result the caller got.
func TestEveryOutcome(t *testing.T) {
	asker := fakePlugin{name: "asker", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
		return pipeline.Ask("really?"), nil
	}}
	hang := func(ctx context.Context, _ *pipeline.Execution, _ string) (bool, error) {
		<-ctx.Done()
		return true, nil
	}
	type scenario struct {
		name    string
		opts    pipeline.Options
		plugins []fakePlugin
		hold    string // holder of a Hold, if any
		tool    string
		args    string
		// cancel, when set, is called with the call's cancel function from
		// inside the pipeline (it cancels the caller's context).
		cancelAt  string
		want      pipeline.Code
		decidedBy string
		says      string
	}
	body := []pipeline.Tool{
		addTool(),
		tool("fail", func(context.Context, *pipeline.Execution) (any, error) { return nil, errors.New("kaboom") }),
		tool("boom", func(context.Context, *pipeline.Execution) (any, error) { panic("boom") }),
		tool("denying", func(context.Context, *pipeline.Execution) (any, error) {
			return nil, &pipeline.Error{Code: pipeline.CodeDenied, Message: "the backend refused"}
		}),
		tool("blocking", func(context.Context, *pipeline.Execution) (any, error) {
			return nil, &pipeline.Error{Code: pipeline.CodeBlocked, Message: "the backend blocked it"}
		}),
		tool("codeless", func(context.Context, *pipeline.Execution) (any, error) {
			return nil, &pipeline.Error{Message: "no code given"}
		}),
		tool("miscoded", func(context.Context, *pipeline.Execution) (any, error) {
			return nil, &pipeline.Error{Code: "NOT_A_CODE", Message: "made-up code"}
		}),
		tool("timing", func(context.Context, *pipeline.Execution) (any, error) {
			return nil, &pipeline.Error{Code: pipeline.CodeToolTimeout, Message: "upstream timed out"}
		}),
		{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "slow", Description: "d", Timeout: 10 * time.Millisecond,
			},
			Execute: func(ctx context.Context, _ *pipeline.Execution) (any, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			},
		},
		tool("wait", func(ctx context.Context, _ *pipeline.Execution) (any, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		}),
	}
	tools := fakePlugin{name: "P", tools: body}
	add := `{"a":2,"b":3}`
	for _, sc := range []scenario{
		{name: "success", tool: "add", args: add},
		{name: "unknown_tool", tool: "nope", args: `{}`, want: pipeline.CodeUnknownTool, says: "no tool named nope"},
		{name: "invalid_arguments", tool: "add", args: `{"a":"x","b":1}`, want: pipeline.CodeInvalidArguments, says: "/a"},

		{name: "pre_deny", plugins: []fakePlugin{{name: "L", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Deny("no"), nil
		}}}, tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "L", says: "no"},
		{name: "pre_error", plugins: []fakePlugin{{name: "L", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Allow(), errors.New("broken")
		}}}, tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "L", says: "broken"},
		{name: "pre_panic", plugins: []fakePlugin{{name: "L", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			panic("oops")
		}}}, tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "L", says: "oops"},
		{name: "pre_zero_decision", plugins: []fakePlugin{{name: "L", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Decision{}, nil
		}}}, tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "L", says: "unknown decision"},
		{name: "ask_without_approver", plugins: []fakePlugin{asker}, tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "asker", says: "really?"},
		{name: "approver_refuses", plugins: []fakePlugin{{name: "A", approver: func(context.Context, *pipeline.Execution, string) (bool, error) { return false, nil }}, asker},
			tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "A", says: "refused"},
		{name: "approver_errors", plugins: []fakePlugin{{name: "A", approver: func(context.Context, *pipeline.Execution, string) (bool, error) { return true, errors.New("down") }}, asker},
			tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "A", says: "down"},
		{name: "approver_panics", plugins: []fakePlugin{{name: "A", approver: func(context.Context, *pipeline.Execution, string) (bool, error) { panic("approver bug") }}, asker},
			tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "A", says: "approver bug"},
		{name: "approval_times_out", opts: pipeline.Options{ApprovalTimeout: 20 * time.Millisecond}, plugins: []fakePlugin{{name: "A", approver: hang}, asker},
			tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "A", says: "timed out"},
		{name: "guard_denies", plugins: []fakePlugin{{name: "G", guard: func(context.Context, *pipeline.Execution) (string, error) { return "not today", nil }}},
			tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "G", says: "not today"},
		{name: "guard_errors", plugins: []fakePlugin{{name: "G", guard: func(context.Context, *pipeline.Execution) (string, error) { return "", errors.New("broken") }}},
			tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "G", says: "guard of G failed: broken"},
		{name: "held", hold: "safety", tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "safety", says: "safety is down"},
		{name: "held_unknown_tool", hold: "safety", tool: "nope", args: `{}`, want: pipeline.CodeDenied, decidedBy: "safety", says: "safety is down"},
		{name: "body_chooses_denied", tool: "denying", args: `{}`, want: pipeline.CodeDenied, decidedBy: "P", says: "the backend refused"},
		{name: "wrapper_returns_denied", plugins: []fakePlugin{{name: "W", exec: func(context.Context, *pipeline.Execution, pipeline.ExecuteNext) pipeline.Result {
			return pipeline.Fail(pipeline.CodeDenied, "quota exhausted")
		}}}, tool: "add", args: add, want: pipeline.CodeDenied, decidedBy: "W", says: "quota exhausted"},

		{name: "post_blocks", plugins: []fakePlugin{{name: "R", post: func(context.Context, *pipeline.Execution, pipeline.Result, pipeline.ReviewNext) (pipeline.Review, error) {
			return pipeline.Block("not acceptable"), nil
		}}}, tool: "add", args: add, want: pipeline.CodeBlocked, decidedBy: "R", says: "not acceptable"},
		{name: "post_errors", plugins: []fakePlugin{{name: "R", post: func(context.Context, *pipeline.Execution, pipeline.Result, pipeline.ReviewNext) (pipeline.Review, error) {
			return pipeline.Accept(), errors.New("broken")
		}}}, tool: "add", args: add, want: pipeline.CodeBlocked, decidedBy: "R", says: "broken"},
		{name: "post_zero_review", plugins: []fakePlugin{{name: "R", post: func(context.Context, *pipeline.Execution, pipeline.Result, pipeline.ReviewNext) (pipeline.Review, error) {
			return pipeline.Review{}, nil
		}}}, tool: "add", args: add, want: pipeline.CodeBlocked, decidedBy: "R", says: "unknown review"},
		{name: "inner_post_blocks_outer_passes", plugins: []fakePlugin{
			{name: "outer", post: func(ctx context.Context, _ *pipeline.Execution, _ pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
				return next(ctx), nil
			}},
			{name: "inner", post: func(context.Context, *pipeline.Execution, pipeline.Result, pipeline.ReviewNext) (pipeline.Review, error) {
				return pipeline.Block("inner blocks"), nil
			}},
		}, tool: "add", args: add, want: pipeline.CodeBlocked, decidedBy: "inner", says: "inner blocks"},
		{name: "body_chooses_blocked", tool: "blocking", args: `{}`, want: pipeline.CodeBlocked, decidedBy: "P", says: "the backend blocked it"},

		{name: "body_errors", tool: "fail", args: `{}`, want: pipeline.CodeToolError, says: "kaboom"},
		{name: "body_panics", tool: "boom", args: `{}`, want: pipeline.CodeToolError, says: "boom"},
		{name: "body_error_without_code", tool: "codeless", args: `{}`, want: pipeline.CodeToolError, says: "no code given"},
		{name: "body_error_with_unknown_code", tool: "miscoded", args: `{}`, want: pipeline.CodeToolError, says: "made-up code"},
		{name: "wrapper_returns_unknown_code", plugins: []fakePlugin{{name: "W", exec: func(context.Context, *pipeline.Execution, pipeline.ExecuteNext) pipeline.Result {
			return pipeline.Fail("OOPS", "wrapper made it up")
		}}}, tool: "add", args: add, want: pipeline.CodeToolError, says: "wrapper made it up"},
		{name: "wrapper_panics", plugins: []fakePlugin{{name: "W", exec: func(context.Context, *pipeline.Execution, pipeline.ExecuteNext) pipeline.Result {
			panic("wrapper bug")
		}}}, tool: "add", args: add, want: pipeline.CodeToolError, says: "wrapper bug"},
		{name: "wrapper_returns_zero_result", plugins: []fakePlugin{{name: "W", exec: func(context.Context, *pipeline.Execution, pipeline.ExecuteNext) pipeline.Result {
			return pipeline.Result{}
		}}}, tool: "add", args: add, want: pipeline.CodeToolError, says: "W"},

		{name: "timeout_policy", plugins: []fakePlugin{{name: "timeout"}}, tool: "slow", args: `{}`, want: pipeline.CodeToolTimeout, says: "slow exceeded 10ms"},
		{name: "body_chooses_timeout", tool: "timing", args: `{}`, want: pipeline.CodeToolTimeout, says: "upstream timed out"},

		{name: "cancelled_before_it_ran", cancelAt: "guard", tool: "add", args: add, want: pipeline.CodeAborted, says: "cancelled"},
		{name: "cancelled_while_running", cancelAt: "body", tool: "wait", args: `{}`, want: pipeline.CodeAborted, says: "cancelled"},
		{name: "cancelled_while_asking", cancelAt: "approver", plugins: []fakePlugin{{name: "A", approver: hang}, asker},
			tool: "add", args: add, want: pipeline.CodeAborted, says: "approval"},
	} {
		t.Run(sc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(testkit.Context(t))
			defer cancel()
			k, svc := newTools(t, sc.opts)
			rec := &recorder{}
			load(t, k, rec.plugin(), tools.plugin())
			for _, p := range sc.plugins {
				if p.name == "timeout" {
					load(t, k, policy.Timeout())
					continue
				}
				load(t, k, p.plugin())
			}
			switch sc.cancelAt {
			case "guard":
				load(t, k, fakePlugin{name: "canceller", guard: func(context.Context, *pipeline.Execution) (string, error) {
					cancel()
					return "", nil
				}}.plugin())
			case "body":
				load(t, k, fakePlugin{name: "canceller", exec: func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
					time.AfterFunc(time.Millisecond, cancel)
					return next(ctx)
				}}.plugin())
			case "approver":
				time.AfterFunc(10*time.Millisecond, cancel)
			}
			if sc.hold != "" {
				defer svc.Hold(sc.hold, sc.hold+" is down")()
			}

			r := svc.Execute(ctx, sc.tool, json.RawMessage(sc.args), "client")
			wantCode(t, r, sc.want)
			if sc.says != "" && !strings.Contains(r.Error.Message, sc.says) {
				t.Errorf("message %q does not say %q", r.Error.Message, sc.says)
			}
			if r.ID == "" {
				t.Error("the result has no id")
			}
			switch {
			case sc.want == pipeline.CodeDenied || sc.want == pipeline.CodeBlocked:
				if r.DecidedBy != sc.decidedBy {
					t.Errorf("decided by %q, want %q", r.DecidedBy, sc.decidedBy)
				}
			case r.DecidedBy != "":
				t.Errorf("a %q result names a decider: %q", sc.want, r.DecidedBy)
			}
			if !r.OK && r.Value != nil && sc.want != pipeline.CodeToolError {
				t.Errorf("a failed call carries a value: %v", r.Value)
			}
			seen := rec.all()
			if len(seen) != 1 {
				t.Fatalf("stage 5 saw %d calls, want 1", len(seen))
			}
			if got := seen[0].result; got.ID != r.ID || got.OK != r.OK || got.Code() != r.Code() || got.DecidedBy != r.DecidedBy {
				t.Errorf("stage 5 saw %+v, the caller got %+v", got, r)
			}
			if seen[0].ctxErr != nil {
				t.Errorf("stage 5 ran with a done context: %v", seen[0].ctxErr)
			}
		})
	}
}

// Ids are unique across calls.
func TestResultIDsUnique(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin())
	seen := map[string]bool{}
	for i := range 100 {
		args := `{"a":1,"b":2}`
		name := "add"
		if i%2 == 1 {
			name = "nope"
		}
		r := tools.Execute(ctx, name, json.RawMessage(args), "client")
		if r.ID == "" || seen[r.ID] {
			t.Fatalf("call %d: id %q is empty or reused", i, r.ID)
		}
		seen[r.ID] = true
	}
}

// The decider of a stage-1 denial is whoever made the decision, even when an
// outer listener passes it on.
func TestStage1DecidedBy(t *testing.T) {
	innerDeny := fakePlugin{name: "inner", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
		return pipeline.Deny("inner says no"), nil
	}}
	for _, tc := range []struct {
		name  string
		outer pipeline.PreExecuteFunc
		want  string
		says  string
	}{
		{"outer_passes_inner_decision", func(ctx context.Context, _ *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			return next(ctx), nil
		}, "inner", "inner says no"},
		{"outer_replaces_inner_decision", func(ctx context.Context, _ *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			d := next(ctx)
			return pipeline.Deny("outer rewrites: " + d.Reason), nil
		}, "outer", "outer rewrites: inner says no"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			k, tools := newTools(t, pipeline.Options{})
			load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
				fakePlugin{name: "outer", pre: tc.outer}.plugin(), innerDeny.plugin())
			r := tools.Execute(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), "client")
			wantCode(t, r, pipeline.CodeDenied)
			if r.DecidedBy != tc.want || r.Error.Message != tc.says {
				t.Errorf("got %q decided by %q, want %q by %q", r.Error.Message, r.DecidedBy, tc.says, tc.want)
			}
		})
	}
}

// next is re-entrant in stage 1: calling it twice runs the inner listeners
// twice.
func TestStage1NextReentrant(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	var inner counter
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
		fakePlugin{name: "outer", pre: func(ctx context.Context, _ *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			first := next(ctx)
			second := next(ctx)
			if first.Verdict != second.Verdict {
				t.Errorf("next answered %v then %v", first.Verdict, second.Verdict)
			}
			return second, nil
		}}.plugin(),
		fakePlugin{name: "inner", pre: func(ctx context.Context, _ *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			inner.inc()
			return next(ctx), nil
		}}.plugin(),
	)
	wantCode(t, tools.Execute(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), "client"), "")
	if n := inner.get(); n != 2 {
		t.Errorf("the inner listener ran %d times, want 2", n)
	}
}

// hostileError is an error whose Error method panics.
type hostileError struct{}

func (hostileError) Error() string { panic("Error() panics") }

// Whatever a plugin returns, no panic reaches the caller or escapes on a
// wrapper's goroutine, and every failure keeps its stage's code.
func TestHostileErrors(t *testing.T) {
	var nilErr *pipeline.Error
	for _, tc := range []struct {
		name string
		p    fakePlugin
		want pipeline.Code
	}{
		{"body_returns_typed_nil_error", fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", func(context.Context, *pipeline.Execution) (any, error) {
			return nil, nilErr
		})}}, pipeline.CodeToolError},
		{"body_error_panics", fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", func(context.Context, *pipeline.Execution) (any, error) {
			return nil, hostileError{}
		})}}, pipeline.CodeToolError},
		{"pre_error_panics", fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", okBody(1))}, pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Decision{}, hostileError{}
		}}, pipeline.CodeDenied},
		{"guard_error_panics", fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", okBody(1))}, guard: func(context.Context, *pipeline.Execution) (string, error) {
			return "", hostileError{}
		}}, pipeline.CodeDenied},
		{"approver_error_panics", fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", okBody(1))},
			pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
				return pipeline.Ask("ok?"), nil
			},
			approver: func(context.Context, *pipeline.Execution, string) (bool, error) { return true, hostileError{} },
		}, pipeline.CodeDenied},
		{"post_error_panics", fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", okBody(1))}, post: func(context.Context, *pipeline.Execution, pipeline.Result, pipeline.ReviewNext) (pipeline.Review, error) {
			return pipeline.Accept(), hostileError{}
		}}, pipeline.CodeBlocked},
		{"observer_error_panics", fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", okBody(1))}, result: func(context.Context, *pipeline.Execution, pipeline.Result) error {
			return hostileError{}
		}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			// A real logger, so that a logged error is formatted.
			k, tools := newTools(t, pipeline.Options{Logger: hclog.New(&hclog.LoggerOptions{Output: io.Discard})})
			// The timeout policy runs the rest of the chain on its own
			// goroutine for a tool with a timeout, where a panic would end
			// the process.
			for i := range tc.p.tools {
				tc.p.tools[i].Timeout = time.Minute
			}
			load(t, k, policy.Timeout(), tc.p.plugin())
			wantCode(t, tools.Execute(ctx, "t", json.RawMessage(`{}`), "client"), tc.want)
		})
	}
}
