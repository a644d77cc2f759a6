package kernel_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
)

// on loads a plugin named name whose only effect is listening to event.
func on(t *testing.T, k *kernel.Kernel, name, event string, h kernel.Handler) *kernel.Scope {
	t.Helper()
	return load(t, k, kernel.Plugin{Name: name, Apply: func(_ context.Context, s *kernel.Scope) error {
		_, err := s.On(event, h)
		return err
	}})
}

// wrap is a waterfall listener that records entering and leaving, and
// returns name(inner result).
func wrap(tr *trail, name string) kernel.Handler {
	return func(ctx context.Context, _ any, next kernel.Next) (any, error) {
		tr.add(name + " in")
		v, err := next(ctx)
		tr.add(name + " out")
		if err != nil {
			return nil, err
		}
		return fmt.Sprintf("%s(%v)", name, v), nil
	}
}

func TestEmit(t *testing.T) {
	t.Run("emit calls every listener in registration order", func(t *testing.T) {
		k, _ := newKernel(t)
		ctx := testkit.ContextFor(t, 10*time.Second)
		var tr trail
		for _, name := range []string{"l1", "l2", "l3"} {
			on(t, k, name, "ev", func(ctx context.Context, payload any, next kernel.Next) (any, error) {
				if next != nil {
					t.Errorf("%s got a next in an emit", name)
				}
				tr.add(fmt.Sprintf("%s:%v", name, payload))
				return "ignored", nil
			})
		}
		k.Events().Emit(ctx, "ev", 42)
		if got, want := tr.get(), []string{"l1:42", "l2:42", "l3:42"}; !slices.Equal(got, want) {
			t.Errorf("calls = %v, want %v", got, want)
		}
		if n := k.Events().Count("ev"); n != 3 {
			t.Errorf("Count = %d, want 3", n)
		}
	})

	t.Run("emit without listeners does nothing", func(t *testing.T) {
		k, _ := newKernel(t)
		k.Events().Emit(testkit.ContextFor(t, 10*time.Second), "nobody-listens", nil)
		if n := k.Events().Count("nobody-listens"); n != 0 {
			t.Errorf("Count = %d, want 0", n)
		}
	})

	for _, tc := range []struct {
		name    string
		fail    func() (any, error)
		wantLog string
	}{
		{name: "a listener that errors is contained and the others still run", fail: func() (any, error) { return nil, errBoom }, wantLog: "boom"},
		{name: "a listener that panics is contained and the others still run", fail: func() (any, error) { panic("kaboom") }, wantLog: "kaboom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, logs := newKernel(t)
			ctx := testkit.ContextFor(t, 10*time.Second)
			var tr trail
			for _, name := range []string{"l1", "bad", "l3"} {
				on(t, k, name, "ev", func(context.Context, any, kernel.Next) (any, error) {
					tr.add(name)
					if name == "bad" {
						return tc.fail()
					}
					return nil, nil
				})
			}
			k.Events().Emit(ctx, "ev", nil)
			if got, want := tr.get(), []string{"l1", "bad", "l3"}; !slices.Equal(got, want) {
				t.Errorf("calls = %v, want %v", got, want)
			}
			var line string
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, "event listener failed") {
					line = l
				}
			}
			for _, want := range []string{"plugin=bad", "event=ev", tc.wantLog} {
				if !strings.Contains(line, want) {
					t.Errorf("log line %q does not contain %q", line, want)
				}
			}
		})
	}
}

func TestWaterfall(t *testing.T) {
	t.Run("the first registered listener is outermost and the default runs last", func(t *testing.T) {
		k, _ := newKernel(t)
		ctx := testkit.ContextFor(t, 10*time.Second)
		var tr trail
		for _, name := range []string{"l1", "l2", "l3"} {
			on(t, k, name, "ev", wrap(&tr, name))
		}
		got, err := k.Events().Waterfall(ctx, "ev", nil, func(context.Context) (any, error) {
			tr.add("last")
			return "last", nil
		})
		if err != nil || got != "l1(l2(l3(last)))" {
			t.Errorf("waterfall = %v, %v; want l1(l2(l3(last)))", got, err)
		}
		want := []string{"l1 in", "l2 in", "l3 in", "last", "l3 out", "l2 out", "l1 out"}
		if got := tr.get(); !slices.Equal(got, want) {
			t.Errorf("calls = %v, want %v", got, want)
		}
	})

	for _, tc := range []struct {
		name string
		last kernel.Next
		want any
	}{
		{name: "without listeners the default decides", last: func(context.Context) (any, error) { return "default", nil }, want: "default"},
		{name: "without listeners or default the result is nil", want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := newKernel(t)
			got, err := k.Events().Waterfall(testkit.ContextFor(t, 10*time.Second), "ev", nil, tc.last)
			if err != nil || got != tc.want {
				t.Errorf("waterfall = %v, %v; want %v", got, err, tc.want)
			}
		})
	}

	t.Run("a nil default ends the chain with nil", func(t *testing.T) {
		k, _ := newKernel(t)
		var tr trail
		on(t, k, "l1", "ev", wrap(&tr, "l1"))
		got, err := k.Events().Waterfall(testkit.ContextFor(t, 10*time.Second), "ev", nil, nil)
		if err != nil || got != "l1(<nil>)" {
			t.Errorf("waterfall = %v, %v; want l1(<nil>)", got, err)
		}
	})

	t.Run("every listener sees the payload", func(t *testing.T) {
		k, _ := newKernel(t)
		var tr trail
		for _, name := range []string{"l1", "l2"} {
			on(t, k, name, "ev", func(ctx context.Context, payload any, next kernel.Next) (any, error) {
				tr.add(fmt.Sprintf("%s:%v", name, payload))
				return next(ctx)
			})
		}
		if _, err := k.Events().Waterfall(testkit.ContextFor(t, 10*time.Second), "ev", "call-7", nil); err != nil {
			t.Fatalf("waterfall: %v", err)
		}
		if got, want := tr.get(), []string{"l1:call-7", "l2:call-7"}; !slices.Equal(got, want) {
			t.Errorf("calls = %v, want %v", got, want)
		}
	})

	t.Run("a listener that does not call next vetoes the rest", func(t *testing.T) {
		k, _ := newKernel(t)
		var tr trail
		on(t, k, "l1", "ev", wrap(&tr, "l1"))
		on(t, k, "veto", "ev", func(context.Context, any, kernel.Next) (any, error) {
			tr.add("veto")
			return "vetoed", nil
		})
		on(t, k, "l3", "ev", wrap(&tr, "l3"))
		got, err := k.Events().Waterfall(testkit.ContextFor(t, 10*time.Second), "ev", nil, func(context.Context) (any, error) {
			tr.add("last")
			return "last", nil
		})
		if err != nil || got != "l1(vetoed)" {
			t.Errorf("waterfall = %v, %v; want l1(vetoed)", got, err)
		}
		if got, want := tr.get(), []string{"l1 in", "veto", "l1 out"}; !slices.Equal(got, want) {
			t.Errorf("calls = %v, want %v", got, want)
		}
	})

	t.Run("an outer listener sees the inner error and may override it", func(t *testing.T) {
		k, _ := newKernel(t)
		var seen error
		on(t, k, "outer", "ev", func(ctx context.Context, _ any, next kernel.Next) (any, error) {
			_, seen = next(ctx)
			return "overridden", nil
		})
		on(t, k, "inner", "ev", func(context.Context, any, kernel.Next) (any, error) { return nil, errBoom })
		got, err := k.Events().Waterfall(testkit.ContextFor(t, 10*time.Second), "ev", nil, nil)
		if err != nil || got != "overridden" {
			t.Errorf("waterfall = %v, %v; want overridden", got, err)
		}
		if !errors.Is(seen, errBoom) {
			t.Errorf("outer listener saw %v, want boom", seen)
		}
	})

	t.Run("next is re-entrant: calling it twice runs the inner listeners twice", func(t *testing.T) {
		k, _ := newKernel(t)
		var tr trail
		on(t, k, "twice", "ev", func(ctx context.Context, _ any, next kernel.Next) (any, error) {
			a, err := next(ctx)
			if err != nil {
				return nil, err
			}
			b, err := next(ctx)
			return fmt.Sprintf("%v+%v", a, b), err
		})
		on(t, k, "l2", "ev", wrap(&tr, "l2"))
		on(t, k, "l3", "ev", wrap(&tr, "l3"))
		got, err := k.Events().Waterfall(testkit.ContextFor(t, 10*time.Second), "ev", nil, func(context.Context) (any, error) {
			tr.add("last")
			return "last", nil
		})
		if err != nil || got != "l2(l3(last))+l2(l3(last))" {
			t.Errorf("waterfall = %v, %v; want l2(l3(last))+l2(l3(last))", got, err)
		}
		once := []string{"l2 in", "l3 in", "last", "l3 out", "l2 out"}
		if got, want := tr.get(), slices.Concat(once, once); !slices.Equal(got, want) {
			t.Errorf("calls = %v, want %v", got, want)
		}
	})

	t.Run("next is re-entrant: a retry around an inner timeout gives each attempt its own clock", func(t *testing.T) {
		k, _ := newKernel(t)
		ctx := testkit.ContextFor(t, 10*time.Second)
		const perAttempt = 50 * time.Millisecond
		var attempts, timeouts counter
		on(t, k, "retry", "ev", func(ctx context.Context, _ any, next kernel.Next) (any, error) {
			var err error
			for range 3 {
				var v any
				if v, err = next(ctx); err == nil {
					return v, nil
				}
			}
			return nil, err
		})
		on(t, k, "timeout", "ev", func(ctx context.Context, _ any, next kernel.Next) (any, error) {
			timeouts.inc()
			ctx, cancel := context.WithTimeout(ctx, perAttempt)
			defer cancel()
			return next(ctx)
		})
		var startErrs []error
		got, err := k.Events().Waterfall(ctx, "ev", nil, func(ctx context.Context) (any, error) {
			attempts.inc()
			startErrs = append(startErrs, ctx.Err())
			if attempts.get() < 3 {
				<-ctx.Done() // a hung attempt: only its own timeout ends it
				return nil, ctx.Err()
			}
			return "ok", nil
		})
		if err != nil || got != "ok" {
			t.Fatalf("waterfall = %v, %v; want ok on the third attempt", got, err)
		}
		if attempts.get() != 3 || timeouts.get() != 3 {
			t.Errorf("%d attempts under %d timeouts, want 3 under 3", attempts.get(), timeouts.get())
		}
		for i, e := range startErrs {
			if e != nil {
				t.Errorf("attempt %d started with its context already done: %v", i+1, e)
			}
		}
	})

	for _, tc := range []struct {
		name    string
		wrapped bool // an outer listener passes the inner error through
	}{
		{name: "an inner listener's panic becomes an error", wrapped: true},
		{name: "the outermost listener's panic becomes an error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := newKernel(t)
			var seen error
			if tc.wrapped {
				on(t, k, "outer", "ev", func(ctx context.Context, _ any, next kernel.Next) (any, error) {
					v, err := next(ctx)
					seen = err
					return v, err
				})
			}
			on(t, k, "bad", "ev", func(context.Context, any, kernel.Next) (any, error) { panic("kaboom") })
			var lastRan counter
			_, err := k.Events().Waterfall(testkit.ContextFor(t, 10*time.Second), "ev", nil, func(context.Context) (any, error) {
				lastRan.inc()
				return "last", nil
			})
			for _, want := range []string{"bad", "panicked", "kaboom"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("waterfall error = %v, want one containing %q", err, want)
				}
			}
			if tc.wrapped && seen == nil {
				t.Error("the outer listener's next did not return the panic as an error")
			}
			if lastRan.get() != 0 {
				t.Error("the default ran after a listener panicked")
			}
		})
	}

	t.Run("a dispatch in flight keeps the listeners it started with", func(t *testing.T) {
		k, _ := newKernel(t)
		var tr trail
		on(t, k, "unloader", "ev", func(ctx context.Context, _ any, next kernel.Next) (any, error) {
			if err := k.Unload("l2"); err != nil {
				return nil, err
			}
			return next(ctx)
		})
		on(t, k, "l2", "ev", wrap(&tr, "l2"))
		got, err := k.Events().Waterfall(testkit.ContextFor(t, 10*time.Second), "ev", nil, nil)
		if err != nil || got != "l2(<nil>)" {
			t.Errorf("waterfall = %v, %v; want l2(<nil>)", got, err)
		}
		if n := k.Events().Count("ev"); n != 1 {
			t.Errorf("Count after l2 left = %d, want 1", n)
		}
	})
}

func TestListenerRemovedOnUnload(t *testing.T) {
	for _, tc := range []struct {
		name     string
		dispatch func(ctx context.Context, ev *kernel.Events)
	}{
		{name: "emit", dispatch: func(ctx context.Context, ev *kernel.Events) { ev.Emit(ctx, "ev", nil) }},
		{name: "waterfall", dispatch: func(ctx context.Context, ev *kernel.Events) { _, _ = ev.Waterfall(ctx, "ev", nil, nil) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := newKernel(t)
			ctx := testkit.ContextFor(t, 10*time.Second)
			var calls counter
			count := func(ctx context.Context, _ any, next kernel.Next) (any, error) {
				calls.inc()
				if next != nil {
					return next(ctx)
				}
				return nil, nil
			}
			on(t, k, "stays", "ev", count)
			on(t, k, "leaves", "ev", count)
			tc.dispatch(ctx, k.Events())
			if got := calls.get(); got != 2 {
				t.Fatalf("%d calls before unload, want 2", got)
			}
			if err := k.Unload("leaves"); err != nil {
				t.Fatalf("unload: %v", err)
			}
			if n := k.Events().Count("ev"); n != 1 {
				t.Errorf("Count after unload = %d, want 1", n)
			}
			tc.dispatch(ctx, k.Events())
			if got := calls.get(); got != 3 {
				t.Errorf("%d calls after unload, want 3 (only the staying listener)", got)
			}
		})
	}
}
