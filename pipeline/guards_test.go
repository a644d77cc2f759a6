package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
)

// concurrentGuard is a plugin with one concurrent guard.
func concurrentGuard(name string, fn pipeline.GuardFunc) fakePlugin {
	return fakePlugin{name: name, apply: func(reg *pipeline.Registrar) error {
		_, err := reg.ConcurrentGuard(fn)
		return err
	}}
}

// Concurrent guards run at the same time: each of three waits until all
// three have started, which would never happen one by one.
func TestConcurrentGuardsRunTogether(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	var started sync.WaitGroup
	started.Add(3)
	all := make(chan struct{})
	go func() { started.Wait(); close(all) }()
	wait := func(ctx context.Context, e *pipeline.Execution) (string, error) {
		started.Done()
		select {
		case <-all:
			return "", nil
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
		concurrentGuard("G1", wait).plugin(),
		concurrentGuard("G2", wait).plugin(),
		concurrentGuard("G3", wait).plugin(),
	)
	r := tools.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":3}`), "c")
	wantCode(t, r, "")
	if r.Value != 5.0 {
		t.Errorf("add = %v, want 5", r.Value)
	}
}

// The reported denial is the first in registration order, whichever
// guard answers first; the guards after it are cancelled and have
// returned by the time the call does.
func TestConcurrentGuardsFirstDenialInOrder(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	secondDenied := make(chan struct{})
	var thirdReturned atomic.Bool
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
		// G1 answers only after G2 has denied: in order, G1's reason wins.
		concurrentGuard("G1", func(ctx context.Context, e *pipeline.Execution) (string, error) {
			<-secondDenied
			return "G1 says no", nil
		}).plugin(),
		concurrentGuard("G2", func(ctx context.Context, e *pipeline.Execution) (string, error) {
			defer close(secondDenied)
			return "G2 says no", nil
		}).plugin(),
		// G3 never answers on its own: it ends when it is cancelled.
		concurrentGuard("G3", func(ctx context.Context, e *pipeline.Execution) (string, error) {
			defer thirdReturned.Store(true)
			<-ctx.Done()
			return "", ctx.Err()
		}).plugin(),
	)
	r := tools.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":3}`), "c")
	wantCode(t, r, pipeline.CodeDenied)
	if r.Error.Message != "G1 says no" || r.DecidedBy != "G1" {
		t.Errorf("got %q decided by %q, want G1's denial", r.Error.Message, r.DecidedBy)
	}
	if !thirdReturned.Load() {
		t.Error("a cancelled guard was still running after the call returned")
	}
}

// In-order guards keep their place among concurrent ones: an in-order
// guard registered first that denies wins over a concurrent one that
// denies too; one registered between two concurrent guards is reported
// only when the first of them passes.
func TestConcurrentGuardsMixedWithInOrder(t *testing.T) {
	deny := func(reason string) pipeline.GuardFunc {
		return func(context.Context, *pipeline.Execution) (string, error) { return reason, nil }
	}
	pass := deny("")
	for _, tc := range []struct {
		name    string
		plugins []fakePlugin
		want    string // who denies; "" for none
	}{
		{"in-order first", []fakePlugin{{name: "A", guard: deny("A")}, concurrentGuard("B", deny("B")), concurrentGuard("C", deny("C"))}, "A"},
		{"concurrent first", []fakePlugin{concurrentGuard("A", deny("A")), {name: "B", guard: deny("B")}, concurrentGuard("C", deny("C"))}, "A"},
		{"in-order between", []fakePlugin{concurrentGuard("A", pass), {name: "B", guard: deny("B")}, concurrentGuard("C", deny("C"))}, "B"},
		{"last", []fakePlugin{concurrentGuard("A", pass), {name: "B", guard: pass}, concurrentGuard("C", deny("C"))}, "C"},
		{"none", []fakePlugin{concurrentGuard("A", pass), {name: "B", guard: pass}, concurrentGuard("C", pass)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			k, tools := newTools(t, pipeline.Options{})
			load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin())
			for _, p := range tc.plugins {
				load(t, k, p.plugin())
			}
			r := tools.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":3}`), "c")
			if tc.want == "" {
				wantCode(t, r, "")
				return
			}
			wantCode(t, r, pipeline.CodeDenied)
			if r.DecidedBy != tc.want || r.Error.Message != tc.want {
				t.Errorf("denied by %q with %q, want %q", r.DecidedBy, r.Error.Message, tc.want)
			}
		})
	}
}

// A concurrent guard that fails or panics denies, named, as any guard does
// (fail closed), and the panic stays contained on its goroutine.
func TestConcurrentGuardFailureDenies(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
		concurrentGuard("ok", func(context.Context, *pipeline.Execution) (string, error) { return "", nil }).plugin(),
		concurrentGuard("broken", func(context.Context, *pipeline.Execution) (string, error) { return "", errors.New("lost its rules") }).plugin(),
		concurrentGuard("panics", func(context.Context, *pipeline.Execution) (string, error) { panic("boom") }).plugin(),
	)
	r := tools.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":3}`), "c")
	wantCode(t, r, pipeline.CodeDenied)
	if r.DecidedBy != "broken" || r.Error.Message != "guard of broken failed: lost its rules" {
		t.Errorf("got %q decided by %q", r.Error.Message, r.DecidedBy)
	}
}

// startedGuard is a plugin with one guard given in two steps.
func startedGuard(name string, start pipeline.GuardStart) fakePlugin {
	return fakePlugin{name: name, apply: func(reg *pipeline.Registrar) error {
		_, err := reg.StartedGuard(start)
		return err
	}}
}

// Started guards are all started before any is waited for, on the
// caller's goroutine, among concurrent guards of the other kind; the
// first denial in registration order wins, and a started guard after it
// is still waited for, its context cancelled.
func TestStartedGuards(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	var (
		started  atomic.Int32
		lastWait = make(chan error, 1)
	)
	start := func(verdict string, last bool) pipeline.GuardStart {
		return func(ctx context.Context, e *pipeline.Execution) func() (string, error) {
			started.Add(1)
			return func() (string, error) {
				if n := started.Load(); n != 3 {
					return "", errors.New("waited for before every started guard was started")
				}
				if last {
					<-ctx.Done()
					lastWait <- ctx.Err()
					return "", ctx.Err()
				}
				return verdict, nil
			}
		}
	}
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
		startedGuard("S1", start("", false)).plugin(),
		concurrentGuard("C1", func(context.Context, *pipeline.Execution) (string, error) { return "", nil }).plugin(),
		startedGuard("S2", start("S2 says no", false)).plugin(),
		concurrentGuard("C2", func(context.Context, *pipeline.Execution) (string, error) { return "C2 says no", nil }).plugin(),
		startedGuard("S3", start("", true)).plugin(),
	)
	r := tools.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":3}`), "c")
	wantCode(t, r, pipeline.CodeDenied)
	if r.DecidedBy != "S2" || r.Error.Message != "S2 says no" {
		t.Errorf("denied by %q with %q, want S2's denial", r.DecidedBy, r.Error.Message)
	}
	select {
	case err := <-lastWait:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the started guard after the denial saw %v, want its context cancelled", err)
		}
	default:
		t.Error("the started guard after the denial was never waited for")
	}
}

// A started guard that panics, in either step, denies, named.
func TestStartedGuardPanics(t *testing.T) {
	for _, tc := range []struct {
		name  string
		start pipeline.GuardStart
	}{
		{"start", func(context.Context, *pipeline.Execution) func() (string, error) { panic("boom") }},
		{"wait", func(context.Context, *pipeline.Execution) func() (string, error) {
			return func() (string, error) { panic("boom") }
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			k, tools := newTools(t, pipeline.Options{})
			pass := func(context.Context, *pipeline.Execution) func() (string, error) {
				return func() (string, error) { return "", nil }
			}
			load(t, k,
				fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
				startedGuard("A", pass).plugin(),
				startedGuard("B", tc.start).plugin(),
			)
			r := tools.Execute(ctx, "add", json.RawMessage(`{"a":2,"b":3}`), "c")
			wantCode(t, r, pipeline.CodeDenied)
			if r.DecidedBy != "B" || r.Error.Message != "guard of B failed: panic: boom" {
				t.Errorf("denied by %q with %q, want B's failure", r.DecidedBy, r.Error.Message)
			}
		})
	}
}
