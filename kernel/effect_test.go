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

func TestEffects(t *testing.T) {
	t.Run("undo runs in reverse registration order", func(t *testing.T) {
		k, _ := newKernel(t)
		var tr trail
		// Each undo records its name and how many listeners of ev remain,
		// so the listener's own undo is placed in the order too.
		mark := func(name string) func() error {
			return func() error { tr.add(fmt.Sprintf("%s (ev: %d)", name, k.Events().Count("ev"))); return nil }
		}
		load(t, k, kernel.Plugin{Name: "p", Apply: func(_ context.Context, s *kernel.Scope) error {
			for _, name := range []string{"first", "second"} {
				if _, err := s.Track(name, mark(name)); err != nil {
					return err
				}
			}
			if _, err := s.On("ev", func(context.Context, any, kernel.Next) (any, error) { return nil, nil }); err != nil {
				return err
			}
			_, err := s.Track("third", mark("third"))
			return err
		}})
		if err := k.Unload("p"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		want := []string{"third (ev: 1)", "second (ev: 0)", "first (ev: 0)"}
		if got := tr.get(); !slices.Equal(got, want) {
			t.Errorf("undo order = %v, want %v", got, want)
		}
	})

	t.Run("undo order includes effects registered after apply", func(t *testing.T) {
		k, _ := newKernel(t)
		var tr trail
		s := load(t, k, kernel.Plugin{Name: "p", Apply: func(_ context.Context, s *kernel.Scope) error {
			_, err := s.Track("during apply", func() error { tr.add("during apply"); return nil })
			return err
		}})
		must(t)(s.Track("after apply", func() error { tr.add("after apply"); return nil }))
		if err := k.Unload("p"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if got, want := tr.get(), []string{"after apply", "during apply"}; !slices.Equal(got, want) {
			t.Errorf("undo order = %v, want %v", got, want)
		}
	})

	for _, tc := range []struct {
		name    string
		undo    func() error
		wantLog string
	}{
		{name: "an undo that errors is logged and the rest still run", undo: func() error { return errBoom }, wantLog: "boom"},
		{name: "an undo that panics is logged and the rest still run", undo: func() error { panic("kaboom") }, wantLog: "kaboom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, logs := newKernel(t)
			var tr trail
			s := load(t, k, kernel.Plugin{Name: "p", Apply: func(_ context.Context, s *kernel.Scope) error {
				if _, err := s.Track("first", func() error { tr.add("first"); return nil }); err != nil {
					return err
				}
				if _, err := s.Track("bad effect", tc.undo); err != nil {
					return err
				}
				_, err := s.Track("third", func() error { tr.add("third"); return nil })
				return err
			}})
			if err := k.Unload("p"); err != nil {
				t.Fatalf("unload: %v", err)
			}
			if got, want := tr.get(), []string{"third", "first"}; !slices.Equal(got, want) {
				t.Errorf("undos run = %v, want %v", got, want)
			}
			if got := s.State(); got != kernel.Disposed {
				t.Errorf("state = %v, want DISPOSED", got)
			}
			var line string
			for l := range strings.Lines(logs.String()) {
				if strings.Contains(l, "undo failed") {
					line = l
				}
			}
			if line == "" {
				t.Fatalf("no undo failure logged; log:\n%s", logs)
			}
			// The line names the plugin (the scope's logger is named after
			// it), the effect and the failure.
			for _, want := range []string{"host.p", "bad effect", tc.wantLog} {
				if !strings.Contains(line, want) {
					t.Errorf("log line %q does not contain %q", line, want)
				}
			}
		})
	}

	for _, tc := range []struct {
		name    string
		undoErr error
	}{
		{name: "undo twice runs the undo once"},
		{name: "undo twice of a failing undo runs it once and returns its error both times", undoErr: errBoom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := newKernel(t)
			var undone counter
			s := load(t, k, kernel.Plugin{Name: "p", Apply: noop})
			e := must(t)(s.Track("once", func() error { undone.inc(); return tc.undoErr }))
			for i := range 2 {
				if err := e.Undo(); !errors.Is(err, tc.undoErr) || (tc.undoErr == nil && err != nil) {
					t.Errorf("undo %d = %v, want %v", i+1, err, tc.undoErr)
				}
			}
			if err := k.Unload("p"); err != nil {
				t.Fatalf("unload: %v", err)
			}
			if got := undone.get(); got != 1 {
				t.Errorf("the undo ran %d times, want 1", got)
			}
		})
	}

	t.Run("undo of an effect after its scope ended does not run it again", func(t *testing.T) {
		k, _ := newKernel(t)
		var undone counter
		s := load(t, k, kernel.Plugin{Name: "p", Apply: noop})
		e := must(t)(s.Track("once", func() error { undone.inc(); return nil }))
		if err := k.Unload("p"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if err := e.Undo(); err != nil {
			t.Errorf("undo after the scope ended = %v", err)
		}
		if got := undone.get(); got != 1 {
			t.Errorf("the undo ran %d times, want 1", got)
		}
	})

	t.Run("an undo that fails at once after its scope ended is logged", func(t *testing.T) {
		k, logs := newKernel(t)
		s := load(t, k, kernel.Plugin{Name: "p", Apply: noop})
		if err := k.Unload("p"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if _, err := s.Track("late effect", func() error { return errBoom }); !errors.Is(err, kernel.ErrScopeEnded) {
			t.Fatalf("track = %v, want ErrScopeEnded", err)
		}
		var line string
		for l := range strings.Lines(logs.String()) {
			if strings.Contains(l, "undo failed") {
				line = l
			}
		}
		for _, want := range []string{"host.p", "late effect", "boom"} {
			if !strings.Contains(line, want) {
				t.Errorf("log line %q does not contain %q", line, want)
			}
		}
	})

	t.Run("disposing a registration does not wait for another plugin's unload", func(t *testing.T) {
		// A remote plugin's unload stops its process and drains its calls
		// in flight; one of those may be another registration's disposal.
		k, _ := newKernel(t)
		ctx := testkit.ContextFor(t, 10*time.Second)
		undoing, release := make(chan struct{}), make(chan struct{})
		load(t, k, kernel.Plugin{Name: "slow", Apply: func(_ context.Context, s *kernel.Scope) error {
			_, err := s.Track("stop process", func() error {
				close(undoing)
				<-release
				return nil
			})
			return err
		}})
		other := load(t, k, kernel.Plugin{Name: "other", Apply: noop})
		on := must(t)(other.On("ev", func(context.Context, any, kernel.Next) (any, error) { return nil, nil }))
		contribution := must(t)(other.Contribute("pt", "", 0, 1))
		unloaded := make(chan error, 1)
		go func() { unloaded <- k.Unload("slow") }()
		waitFor(t, ctx, undoing, "the slow undo to start")
		disposed := make(chan error, 1)
		go func() {
			err := on.Undo()
			if err == nil {
				err = contribution.Undo()
			}
			disposed <- err
		}()
		var err error
		select {
		case err = <-disposed:
		case <-time.After(2 * time.Second):
			t.Error("disposing a listener waited for another plugin's unload")
			close(release)
			err = waitFor(t, ctx, disposed, "the disposal")
		}
		if err != nil {
			t.Errorf("undo: %v", err)
		}
		select {
		case <-release:
		default:
			close(release)
		}
		if err := waitFor(t, ctx, unloaded, "the unload"); err != nil {
			t.Errorf("unload: %v", err)
		}
		if k.Events().Count("ev") != 0 || k.Points().Exists("pt") {
			t.Error("the disposed registrations are still there")
		}
	})

	t.Run("disposing one effect of a live plugin leaves the rest", func(t *testing.T) {
		k, _ := newKernel(t)
		var undone counter
		var on *kernel.Effect
		s := load(t, k, kernel.Plugin{Name: "p", Apply: func(_ context.Context, s *kernel.Scope) error {
			var err error
			on, err = s.On("ev", func(context.Context, any, kernel.Next) (any, error) { return nil, nil })
			if err != nil {
				return err
			}
			if _, err := s.Contribute("pt", "key", 0, 1); err != nil {
				return err
			}
			_, err = s.Track("custom", func() error { undone.inc(); return nil })
			return err
		}})
		if got := on.String(); got != "on ev" {
			t.Errorf("effect names itself %q, want %q", got, "on ev")
		}
		if err := on.Undo(); err != nil {
			t.Fatalf("undo: %v", err)
		}
		if n := k.Events().Count("ev"); n != 0 {
			t.Errorf("%d listeners of ev after disposing it", n)
		}
		if !k.Points().Exists("pt") {
			t.Error("the contribution went with the listener")
		}
		if undone.get() != 0 {
			t.Error("the tracked effect was undone with the listener")
		}
		if got := s.State(); got != kernel.Active {
			t.Errorf("state = %v, want ACTIVE", got)
		}
		if got, want := info(t, k, "p").Effects, []string{"contribute pt key", "custom"}; !slices.Equal(got, want) {
			t.Errorf("Describe effects = %v, want %v", got, want)
		}
		if err := k.Unload("p"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if k.Points().Exists("pt") || undone.get() != 1 {
			t.Error("unload left the remaining effects in place")
		}
	})
}
