package policy_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/pipeline/policy"
	"github.com/plugkit-go/plugkit/shared/wire"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// host is a kernel with the tools service and the given plugins loaded.
func host(t *testing.T, plugins ...kernel.Plugin) *pipeline.Tools {
	t.Helper()
	k := kernel.New(hclog.NewNullLogger())
	tools := pipeline.New(k, pipeline.Options{})
	t.Cleanup(func() {
		k.Close()
		tools.Close()
	})
	for _, p := range append([]kernel.Plugin{tools.Plugin()}, plugins...) {
		if _, err := k.Load(p); err != nil {
			t.Fatalf("load %s: %v", p.Name, err)
		}
	}
	return tools
}

// toolPlugin registers tools, and, when exec is set, a stage-3 wrapper.
type toolPlugin struct {
	name  string
	tools []pipeline.Tool
	exec  pipeline.ExecuteFunc
}

func (p toolPlugin) plugin() kernel.Plugin {
	return kernel.Plugin{Name: p.name, Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
		reg, err := pipeline.RegistrarOf(s)
		if err != nil {
			return err
		}
		for _, t := range p.tools {
			if _, err := reg.Register(t); err != nil {
				return err
			}
		}
		if p.exec != nil {
			_, err = reg.OnExecute(p.exec)
		}
		return err
	}}
}

// recv receives from ch, failing t when ctx ends first.
func recv[T any](t *testing.T, ctx context.Context, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("gave up waiting: %v", ctx.Err())
		panic("unreachable")
	}
}

func call(ctx context.Context, tools *pipeline.Tools, name string) pipeline.Result {
	return tools.Execute(ctx, name, json.RawMessage(`{}`), "client")
}

// overlap measures how many bodies run at once, per key.
type overlap struct {
	mu       sync.Mutex
	now, max map[string]int
}

func newOverlap() *overlap { return &overlap{now: map[string]int{}, max: map[string]int{}} }

// body counts itself under key while it sleeps a little.
func (o *overlap) body(keys ...string) pipeline.ToolFunc {
	return func(ctx context.Context, e *pipeline.Execution) (any, error) {
		o.mu.Lock()
		for _, k := range keys {
			o.now[k]++
			o.max[k] = max(o.max[k], o.now[k])
		}
		o.mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		o.mu.Lock()
		for _, k := range keys {
			o.now[k]--
		}
		o.mu.Unlock()
		return nil, nil
	}
}

func (o *overlap) most(key string) int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.max[key]
}

// callAll makes n concurrent calls to each tool and checks they succeed.
func callAll(t *testing.T, tools *pipeline.Tools, n int, names ...string) {
	t.Helper()
	ctx := testkit.Context(t)
	var wg sync.WaitGroup
	results := make(chan pipeline.Result, n*len(names))
	for range n {
		for _, name := range names {
			wg.Go(func() { results <- call(ctx, tools, name) })
		}
	}
	wg.Wait()
	close(results)
	for r := range results {
		if !r.OK {
			t.Errorf("a call failed: %v", r.Error)
		}
	}
}

func TestConcurrency(t *testing.T) {
	t.Run("global_limit_one", func(t *testing.T) {
		o := newOverlap()
		tools := host(t, policy.Concurrency(policy.ConcurrencyConfig{Global: 1}),
			toolPlugin{name: "P", tools: []pipeline.Tool{
				{ToolDescriptor: wire.ToolDescriptor{Name: "x", Description: "d"}, Execute: o.body("all")},
				{ToolDescriptor: wire.ToolDescriptor{Name: "y", Description: "d"}, Execute: o.body("all")},
			}}.plugin())
		callAll(t, tools, 4, "x", "y")
		if n := o.most("all"); n != 1 {
			t.Errorf("%d calls overlapped under a global limit of 1", n)
		}
	})
	t.Run("per_tool_limit_one", func(t *testing.T) {
		o := newOverlap()
		tools := host(t, policy.Concurrency(policy.ConcurrencyConfig{PerTool: 1, Tools: map[string]int{"wide": 3}}),
			toolPlugin{name: "P", tools: []pipeline.Tool{
				{ToolDescriptor: wire.ToolDescriptor{Name: "x", Description: "d"}, Execute: o.body("x")},
				{ToolDescriptor: wire.ToolDescriptor{Name: "y", Description: "d"}, Execute: o.body("y")},
				{ToolDescriptor: wire.ToolDescriptor{Name: "wide", Description: "d"}, Execute: o.body("wide")},
			}}.plugin())
		callAll(t, tools, 6, "x", "y", "wide")
		for _, name := range []string{"x", "y"} {
			if n := o.most(name); n != 1 {
				t.Errorf("%d calls to %s overlapped under a per-tool limit of 1", n, name)
			}
		}
		if n := o.most("wide"); n > 3 {
			t.Errorf("%d calls to wide overlapped under its limit of 3", n)
		}
	})
	t.Run("per_tool_limit_lets_other_tools_run", func(t *testing.T) {
		// x waits for y to start: under a per-tool limit they run together;
		// were they serialised, x would wait until its context ended.
		ctx := testkit.Context(t)
		yStarted := make(chan struct{})
		tools := host(t, policy.Concurrency(policy.ConcurrencyConfig{PerTool: 1}),
			toolPlugin{name: "P", tools: []pipeline.Tool{
				{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "x", Description: "d",
					},
					Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
						select {
						case <-yStarted:
							return "together", nil
						case <-time.After(10 * time.Second):
							return nil, errors.New("y never started while x ran")
						}
					},
				},
				{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "y", Description: "d",
					},
					Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
						close(yStarted)
						return nil, nil
					},
				},
			}}.plugin())
		x := make(chan pipeline.Result, 1)
		go func() { x <- call(ctx, tools, "x") }()
		if r := call(ctx, tools, "y"); !r.OK {
			t.Fatalf("y: %v", r.Error)
		}
		if r := recv(t, ctx, x); !r.OK {
			t.Fatalf("x: %v", r.Error)
		}
	})
	t.Run("caller_gives_up_while_waiting", func(t *testing.T) {
		ctx := testkit.Context(t)
		release := make(chan struct{})
		entered := make(chan struct{})
		tools := host(t,
			// Outermost: hands the limiter an already cancelled context for
			// the second call, which must wait for the first one's slot.
			toolPlugin{name: "giveup", exec: func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
				if e.Name() == "second" {
					cctx, cancel := context.WithCancel(ctx)
					cancel()
					return next(cctx)
				}
				return next(ctx)
			}}.plugin(),
			policy.Concurrency(policy.ConcurrencyConfig{Global: 1}),
			toolPlugin{name: "P", tools: []pipeline.Tool{
				{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "first", Description: "d",
					},
					Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
						close(entered)
						select {
						case <-release:
						case <-ctx.Done():
						}
						return nil, nil
					},
				},
				{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "second", Description: "d",
					},
					Execute: func(context.Context, *pipeline.Execution) (any, error) {
						return nil, errors.New("second ran without a slot")
					},
				},
				{ToolDescriptor: wire.ToolDescriptor{Name: "third", Description: "d"}, Execute: func(context.Context, *pipeline.Execution) (any, error) { return 3, nil }},
			}}.plugin())
		first := make(chan pipeline.Result, 1)
		go func() { first <- call(ctx, tools, "first") }()
		recv(t, ctx, entered)
		r := call(ctx, tools, "second")
		if r.Code() != pipeline.CodeAborted {
			t.Errorf("second = %+v, want ABORTED", r.Error)
		}
		close(release)
		if r := recv(t, ctx, first); !r.OK {
			t.Errorf("first: %v", r.Error)
		}
		// The slot was given back.
		if r := call(ctx, tools, "third"); !r.OK {
			t.Errorf("third: %v", r.Error)
		}
	})
}

// flaky fails its first fails runs with TOOL_ERROR, then succeeds; it
// counts its runs.
type flaky struct {
	mu    sync.Mutex
	runs  int
	fails int
}

func (f *flaky) body(ctx context.Context, e *pipeline.Execution) (any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.runs++
	if f.runs <= f.fails {
		return nil, errors.New("flaky")
	}
	return f.runs, nil
}

func (f *flaky) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs
}

func TestRetry(t *testing.T) {
	fast := policy.RetryConfig{Attempts: 3, Backoff: time.Millisecond}
	for _, tc := range []struct {
		name       string
		cfg        policy.RetryConfig
		idempotent bool
		fails      int
		want       pipeline.Code
		runs       int
	}{
		{"idempotent_always_failing_is_bounded", fast, true, 100, pipeline.CodeToolError, 3},
		{"idempotent_recovers", fast, true, 2, "", 3},
		{"success_is_not_retried", fast, true, 0, "", 1},
		{"not_idempotent_runs_once", fast, false, 100, pipeline.CodeToolError, 1},
		{"default_attempts", policy.RetryConfig{Backoff: time.Millisecond}, true, 100, pipeline.CodeToolError, 3},
		{"five_attempts", policy.RetryConfig{Attempts: 5, Backoff: time.Millisecond}, true, 100, pipeline.CodeToolError, 5},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			f := &flaky{fails: tc.fails}
			tools := host(t, policy.Retry(tc.cfg), toolPlugin{name: "P", tools: []pipeline.Tool{
				{ToolDescriptor: wire.ToolDescriptor{Name: "t", Description: "d", Idempotent: tc.idempotent}, Execute: f.body},
			}}.plugin())
			r := call(ctx, tools, "t")
			if r.Code() != tc.want {
				t.Errorf("code = %q, want %q", r.Code(), tc.want)
			}
			if n := f.count(); n != tc.runs {
				t.Errorf("the body ran %d times, want %d", n, tc.runs)
			}
		})
	}

	t.Run("other_codes_are_not_retried", func(t *testing.T) {
		ctx := testkit.Context(t)
		var runs int
		tools := host(t, policy.Retry(fast), toolPlugin{name: "P", tools: []pipeline.Tool{
			{
				ToolDescriptor: wire.ToolDescriptor{
					Name: "t", Description: "d", Idempotent: true,
				},
				Execute: func(context.Context, *pipeline.Execution) (any, error) {
					runs++
					return nil, &pipeline.Error{Code: pipeline.CodeBlocked, Message: "the backend said no"}
				},
			},
		}}.plugin())
		if r := call(ctx, tools, "t"); r.Code() != pipeline.CodeBlocked || runs != 1 {
			t.Errorf("code %q after %d runs, want BLOCKED after 1", r.Code(), runs)
		}
	})

	t.Run("caller_cancel_stops_the_backoff", func(t *testing.T) {
		ctx, cancel := context.WithCancel(testkit.Context(t))
		defer cancel()
		f := &flaky{fails: 100}
		ranOnce := make(chan struct{})
		tools := host(t, policy.Retry(policy.RetryConfig{Attempts: 3, Backoff: time.Hour}), toolPlugin{
			name:  "P",
			tools: []pipeline.Tool{{ToolDescriptor: wire.ToolDescriptor{Name: "t", Description: "d", Idempotent: true}, Execute: f.body}},
			// Inside the retry: signals once the first attempt's result is
			// made, so that the cancel below lands in the backoff.
			exec: func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
				r := next(ctx)
				close(ranOnce)
				return r
			},
		}.plugin())
		done := make(chan pipeline.Result, 1)
		go func() { done <- call(ctx, tools, "t") }()
		recv(t, ctx, ranOnce)
		cancel()
		select {
		case r := <-done:
			// The caller gave up: ABORTED, naming what the first attempt said.
			if r.Code() != pipeline.CodeAborted || f.count() != 1 || !strings.Contains(r.Error.Message, "TOOL_ERROR") {
				t.Errorf("result %+v after %d runs, want ABORTED naming the first attempt's TOOL_ERROR", r.Error, f.count())
			}
		case <-time.After(10 * time.Second):
			t.Fatal("the retry kept waiting out its backoff after the caller gave up")
		}
	})
}
