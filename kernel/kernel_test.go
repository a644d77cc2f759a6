package kernel_test

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
)

// Every test ends with a goroutine-leak check: an apply step, a listener or
// an undo left running after its scope ended is a bug.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

var errBoom = errors.New("boom")

// newKernel returns a kernel logging into a buffer at every level; it is
// closed when the test ends.
func newKernel(t *testing.T) (*kernel.Kernel, *testkit.Buffer) {
	t.Helper()
	logs := &testkit.Buffer{}
	k := kernel.New(hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Trace, Output: logs}))
	t.Cleanup(k.Close)
	return k, logs
}

// waitFor fails the test when ch is not closed (or sent on) before ctx ends.
func waitFor[T any](t *testing.T, ctx context.Context, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-ctx.Done():
		t.Fatalf("timed out waiting for %s", what)
		var zero T
		return zero
	}
}

// load loads p and fails the test on an error.
func load(t *testing.T, k *kernel.Kernel, p kernel.Plugin) *kernel.Scope {
	t.Helper()
	s, err := k.Load(p)
	if err != nil {
		t.Fatalf("load %s: %v", p.Name, err)
	}
	return s
}

func noop(context.Context, *kernel.Scope) error { return nil }

// must returns a check that fails the test on a registration error and
// returns the effect: must(t)(s.On(...)).
func must(t *testing.T) func(*kernel.Effect, error) *kernel.Effect {
	return func(e *kernel.Effect, err error) *kernel.Effect {
		t.Helper()
		if err != nil {
			t.Fatalf("registration: %v", err)
		}
		if e == nil {
			t.Fatal("registration returned no effect")
		}
		return e
	}
}

// counter counts calls from any goroutine.
type counter struct {
	mu sync.Mutex
	n  int
}

func (c *counter) inc() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
}

func (c *counter) get() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// trail records strings in order from any goroutine.
type trail struct {
	mu    sync.Mutex
	steps []string
}

func (tr *trail) add(s string) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.steps = append(tr.steps, s)
}

func (tr *trail) get() []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return slices.Clone(tr.steps)
}

// stateLog records every kernel/state event, seen through a listener of an
// "observer" plugin loaded first (so it is unloaded last by Close).
type stateLog struct {
	mu      sync.Mutex
	changes []kernel.StateChange
}

func recordStates(t *testing.T, k *kernel.Kernel) *stateLog {
	t.Helper()
	r := &stateLog{}
	load(t, k, kernel.Plugin{Name: "observer", Apply: func(_ context.Context, s *kernel.Scope) error {
		_, err := s.On(kernel.EventStateChanged, func(_ context.Context, payload any, _ kernel.Next) (any, error) {
			c, ok := payload.(kernel.StateChange)
			if !ok {
				return nil, errors.New("state event without a StateChange")
			}
			r.mu.Lock()
			r.changes = append(r.changes, c)
			r.mu.Unlock()
			return nil, nil
		})
		return err
	}})
	return r
}

// of returns the changes of one plugin, in order.
func (r *stateLog) of(plugin string) []kernel.StateChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []kernel.StateChange
	for _, c := range r.changes {
		if c.Plugin == plugin {
			out = append(out, c)
		}
	}
	return out
}

// states returns the states one plugin moved to, in order.
func (r *stateLog) states(plugin string) []kernel.State {
	var out []kernel.State
	for _, c := range r.of(plugin) {
		out = append(out, c.To)
	}
	return out
}

// all returns every change recorded.
func (r *stateLog) all() []kernel.StateChange {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.changes)
}

// checkChain fails when a plugin's changes do not follow each other (each
// From is the previous To).
func checkChain(t *testing.T, changes []kernel.StateChange) {
	t.Helper()
	for i := 1; i < len(changes); i++ {
		if changes[i].From != changes[i-1].To {
			t.Errorf("change %d of %s goes %v→%v after a change to %v", i, changes[i].Plugin, changes[i].From, changes[i].To, changes[i-1].To)
		}
	}
}

// info returns the description of one plugin.
func info(t *testing.T, k *kernel.Kernel, name string) kernel.ScopeInfo {
	t.Helper()
	for _, si := range k.Describe() {
		if si.Name == name {
			return si
		}
	}
	t.Fatalf("Describe has no %s", name)
	return kernel.ScopeInfo{}
}

// isDone says whether ctx has been cancelled.
func isDone(ctx context.Context) bool {
	if ctx == nil {
		return false
	}
	select {
	case <-ctx.Done():
		return true
	default:
		return false
	}
}
