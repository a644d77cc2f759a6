package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

func TestApprovalTimeout(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{ApprovalTimeout: 50 * time.Millisecond})
	approverDone := make(chan error, 1)
	var ran counter
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", func(context.Context, *pipeline.Execution) (any, error) {
			ran.inc()
			return 1, nil
		})}}.plugin(),
		fakePlugin{name: "slowpoke", approver: func(ctx context.Context, e *pipeline.Execution, reason string) (bool, error) {
			<-ctx.Done()
			approverDone <- ctx.Err()
			return true, nil // too late: an answer after the timeout is not heard
		}}.plugin(),
		fakePlugin{name: "asker", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Ask("really?"), nil
		}}.plugin(),
	)
	start := time.Now()
	r := tools.Execute(ctx, "t", nil, "client")
	took := time.Since(start)
	wantCode(t, r, pipeline.CodeDenied)
	if want := "approval timed out after 50ms: really?"; r.Error.Message != want {
		t.Errorf("message = %q, want %q", r.Error.Message, want)
	}
	if r.DecidedBy != "slowpoke" {
		t.Errorf("decided by %q, want slowpoke", r.DecidedBy)
	}
	if took >= time.Second {
		t.Errorf("the call took %v with a 50ms approval timeout", took)
	}
	select {
	case err := <-approverDone:
		if err != context.DeadlineExceeded {
			t.Errorf("the approver's context ended with %v, want its deadline", err)
		}
	case <-ctx.Done():
		t.Fatal("the approver's context was never cancelled")
	}
	if ran.get() != 0 {
		t.Error("the body ran")
	}
}

// A stage-1 listener, a guard, a wrapper, a post-execute listener and an
// observer registered for tool a are not called for tool b.
func TestInterestFilters(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	var mu sync.Mutex
	var calls []string
	saw := func(stage string, e *pipeline.Execution) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, stage+" "+e.Name())
	}
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{tool("a", okBody("a")), tool("b", okBody("b")), tool("c", okBody("c"))}}.plugin(),
		fakePlugin{
			name: "picky",
			only: []string{"a", "c"},
			pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				saw("pre", e)
				return next(ctx), nil
			},
			guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
				saw("guard", e)
				if e.Name() == "c" {
					return "c is guarded", nil
				}
				return "", nil
			},
			exec: func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
				saw("exec", e)
				return next(ctx)
			},
			post: func(ctx context.Context, e *pipeline.Execution, r pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
				saw("post", e)
				return next(ctx), nil
			},
			result: func(ctx context.Context, e *pipeline.Execution, r pipeline.Result) error {
				saw("result", e)
				return nil
			},
		}.plugin(),
	)
	wantCode(t, tools.Execute(ctx, "b", nil, "client"), "")
	wantCode(t, tools.Execute(ctx, "nope", nil, "client"), pipeline.CodeUnknownTool)
	mu.Lock()
	if len(calls) != 0 {
		t.Errorf("listeners for a and c saw %q", calls)
	}
	mu.Unlock()
	wantCode(t, tools.Execute(ctx, "a", nil, "client"), "")
	wantCode(t, tools.Execute(ctx, "c", nil, "client"), pipeline.CodeDenied)
	mu.Lock()
	defer mu.Unlock()
	want := []string{"pre a", "guard a", "exec a", "post a", "result a", "pre c", "guard c", "result c"}
	if !slices.Equal(calls, want) {
		t.Errorf("calls = %q, want %q", calls, want)
	}
}

// Hold denies every call, naming the holder, until released.
func TestHold(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	rec := &recorder{}
	var ran counter
	var preRan counter
	load(t, k,
		rec.plugin(),
		fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", func(context.Context, *pipeline.Execution) (any, error) {
			ran.inc()
			return 1, nil
		})}}.plugin(),
		fakePlugin{name: "L", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			preRan.inc()
			return next(ctx), nil
		}}.plugin(),
	)
	wantCode(t, tools.Execute(ctx, "t", nil, "client"), "")

	release := tools.Hold("safety", "critical plugin safety is restarting")
	for _, name := range []string{"t", "nope"} {
		r := tools.Execute(ctx, name, nil, "client")
		wantCode(t, r, pipeline.CodeDenied)
		if r.DecidedBy != "safety" || !strings.Contains(r.Error.Message, "safety") {
			t.Errorf("%s: %q decided by %q, want a denial naming safety", name, r.Error.Message, r.DecidedBy)
		}
	}
	if ran.get() != 1 || preRan.get() != 1 {
		t.Errorf("while held, the body ran %d times and stage 1 %d times, want once each (before the hold)", ran.get(), preRan.get())
	}

	// Two holders: the call proceeds only once both released.
	releaseOther := tools.Hold("audit", "critical plugin audit is restarting")
	release()
	release() // releasing twice is harmless
	r := tools.Execute(ctx, "t", nil, "client")
	wantCode(t, r, pipeline.CodeDenied)
	if r.DecidedBy != "audit" {
		t.Errorf("decided by %q, want the remaining holder audit", r.DecidedBy)
	}
	releaseOther()
	wantCode(t, tools.Execute(ctx, "t", nil, "client"), "")

	var codes []pipeline.Code
	for _, o := range rec.all() {
		codes = append(codes, o.result.Code())
	}
	want := []pipeline.Code{"", pipeline.CodeDenied, pipeline.CodeDenied, pipeline.CodeDenied, ""}
	if !slices.Equal(codes, want) {
		t.Errorf("stage 5 saw %q, want %q", codes, want)
	}
}

// Stage 4 runs after every stage-3 outcome, and each listener sees the
// result it reviews.
func TestPostExecuteSeesResult(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	var seen []string
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
		fakePlugin{name: "R", post: func(ctx context.Context, e *pipeline.Execution, r pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
			b, _ := json.Marshal(r.Value)
			seen = append(seen, string(r.Code())+" "+string(b))
			return next(ctx), nil
		}}.plugin(),
	)
	wantCode(t, tools.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":3}`), "c"), "")
	if want := []string{" 5"}; !slices.Equal(seen, want) {
		t.Errorf("stage 4 saw %q, want %q", seen, want)
	}
}

// Stage 5 sees the arguments of a call that never reached a tool, so that
// a record of it (an audit digest) is of what was asked.
func TestObserversSeeArgumentsOfRejectedCalls(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	seen := map[string]string{}
	var mu sync.Mutex
	load(t, k, fakePlugin{name: "p", tools: []pipeline.Tool{addTool()}, result: func(_ context.Context, e *pipeline.Execution, r pipeline.Result) error {
		mu.Lock()
		defer mu.Unlock()
		seen[string(r.Error.Code)] = e.ArgumentsJSON()
		return nil
	}}.plugin())
	ctx := testkit.Context(t)
	tools.Execute(ctx, "nope", json.RawMessage(`{"x":1}`), "t")
	tools.Execute(ctx, "add", json.RawMessage(`{"a":"one"}`), "t")
	tools.Execute(ctx, "nope", json.RawMessage(`{not json`), "t")
	mu.Lock()
	defer mu.Unlock()
	if got := seen[string(pipeline.CodeInvalidArguments)]; got != `{"a":"one"}` {
		t.Errorf("INVALID_ARGUMENTS call seen with arguments %q", got)
	}
	if got := seen[string(pipeline.CodeUnknownTool)]; got != "" {
		t.Errorf("a call whose arguments are not JSON was seen with %q", got)
	}
}

// A caller that gives up gets ABORTED even when stage 4 has listeners:
// they review the outcome with a context that is not cancelled.
func TestAbortedSurvivesStage4(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	started := make(chan struct{})
	var postErr error
	load(t, k, fakePlugin{
		name: "p",
		tools: []pipeline.Tool{{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "hang", Description: "Waits for its caller to give up.",
			},
			Execute: func(ctx context.Context, _ *pipeline.Execution) (any, error) {
				close(started)
				<-ctx.Done()
				return nil, ctx.Err()
			},
		}},
		post: func(ctx context.Context, _ *pipeline.Execution, _ pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
			postErr = ctx.Err()
			return next(ctx), nil
		},
	}.plugin())
	ctx, cancel := context.WithCancel(testkit.Context(t))
	go func() { <-started; cancel() }()
	r := tools.Execute(ctx, "hang", json.RawMessage(`{}`), "t")
	if r.OK || r.Error.Code != pipeline.CodeAborted {
		t.Fatalf("result = %+v, want ABORTED", r)
	}
	if postErr != nil {
		t.Fatalf("the post-execute listener ran with a cancelled context: %v", postErr)
	}
}

// When the caller gives up, a listener's failure is the cancellation
// reaching it, not its Deny: the call is ABORTED and blames no plugin,
// whichever stage was running. A listener that fails on its own while the
// caller still waits is its Deny as before.
func TestCancelledCallIsAbortedNotDenied(t *testing.T) {
	// failOnCancel waits for the call's context, as a remote listener's RPC
	// does, and fails with it.
	failOnCancel := func(ctx context.Context, started chan<- struct{}) error {
		close(started)
		<-ctx.Done()
		return ctx.Err()
	}
	cases := []struct {
		name   string
		plugin func(started chan<- struct{}) fakePlugin
	}{
		{"pre-execute listener fails", func(started chan<- struct{}) fakePlugin {
			return fakePlugin{name: "L", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				return pipeline.Decision{}, failOnCancel(ctx, started)
			}}
		}},
		{"pre-execute listener denies", func(started chan<- struct{}) fakePlugin {
			return fakePlugin{name: "L", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				_ = failOnCancel(ctx, started)
				return pipeline.Deny("my rpc failed"), nil
			}}
		}},
		{"guard fails", func(started chan<- struct{}) fakePlugin {
			return fakePlugin{name: "L", guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
				return "", failOnCancel(ctx, started)
			}}
		}},
		{"execute wrapper fails", func(started chan<- struct{}) fakePlugin {
			return fakePlugin{name: "L", exec: func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
				err := failOnCancel(ctx, started)
				return pipeline.Fail(pipeline.CodeToolError, "execute listener failed: "+err.Error())
			}}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, tools := newTools(t, pipeline.Options{})
			var ran counter
			var rec recorder
			started := make(chan struct{})
			load(t, k,
				fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", func(context.Context, *pipeline.Execution) (any, error) {
					ran.inc()
					return 1, nil
				})}}.plugin(),
				c.plugin(started).plugin(),
				rec.plugin(),
			)
			ctx, cancel := context.WithCancel(testkit.Context(t))
			defer cancel()
			done := make(chan pipeline.Result, 1)
			go func() { done <- tools.Execute(ctx, "t", nil, "client") }()
			recv(t, testkit.Context(t), started)
			cancel()
			r := recv(t, testkit.Context(t), done)
			wantCode(t, r, pipeline.CodeAborted)
			if r.DecidedBy != "" {
				t.Errorf("decided_by = %q, want no plugin blamed", r.DecidedBy)
			}
			seen := rec.all()
			if len(seen) != 1 || seen[0].result.Code() != pipeline.CodeAborted {
				t.Errorf("stage 5 saw %+v, want one ABORTED", seen)
			}
			if c.name != "execute wrapper fails" && ran.get() != 0 {
				t.Error("the body ran")
			}
		})
	}

	t.Run("a listener failing on its own is still its Deny", func(t *testing.T) {
		k, tools := newTools(t, pipeline.Options{})
		load(t, k,
			fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", okBody(1))}}.plugin(),
			fakePlugin{name: "L", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
				return pipeline.Decision{}, errors.New("broken")
			}}.plugin(),
		)
		r := tools.Execute(testkit.Context(t), "t", nil, "client")
		wantCode(t, r, pipeline.CodeDenied)
		if r.DecidedBy != "L" {
			t.Errorf("decided_by = %q, want L", r.DecidedBy)
		}
	})
}

// Options.OnApproval hears how each Ask ended.
func TestOnApproval(t *testing.T) {
	asker := fakePlugin{name: "asker", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
		return pipeline.Ask("sure?"), nil
	}}
	approver := func(ok bool, err error, wait bool) pipeline.ApproverFunc {
		return func(ctx context.Context, e *pipeline.Execution, q string) (bool, error) {
			if wait {
				<-ctx.Done()
			}
			return ok, err
		}
	}
	for _, c := range []struct {
		name     string
		approver pipeline.ApproverFunc
		cancel   bool
		want     pipeline.Approval
	}{
		{"approved", approver(true, nil, false), false, pipeline.Approved},
		{"refused", approver(false, nil, false), false, pipeline.Refused},
		{"failed", approver(false, errors.New("no terminal"), false), false, pipeline.ApprovalFailed},
		{"timed out", approver(true, nil, true), false, pipeline.ApprovalTimedOut},
		{"no approver", nil, false, pipeline.NoApprover},
		{"cancelled", approver(true, nil, true), true, pipeline.AskCancelled},
	} {
		t.Run(c.name, func(t *testing.T) {
			var mu sync.Mutex
			var heard []string
			k, tools := newTools(t, pipeline.Options{ApprovalTimeout: 50 * time.Millisecond, OnApproval: func(tool string, o pipeline.Approval) {
				mu.Lock()
				heard = append(heard, tool+" "+string(o))
				mu.Unlock()
			}})
			load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", okBody(1))}}.plugin(), asker.plugin())
			if c.approver != nil {
				load(t, k, fakePlugin{name: "A", approver: c.approver}.plugin())
			}
			ctx, cancel := context.WithCancel(testkit.Context(t))
			defer cancel()
			if c.cancel {
				time.AfterFunc(10*time.Millisecond, cancel)
			}
			tools.Execute(ctx, "t", nil, "client")
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(heard, []string{"t " + string(c.want)}) {
				t.Errorf("heard %q, want [t %s]", heard, c.want)
			}
		})
	}
}
