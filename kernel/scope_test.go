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

func TestScopeStates(t *testing.T) {
	t.Run("load and unload walk every state", func(t *testing.T) {
		k, _ := newKernel(t)
		rec := recordStates(t, k)
		var during kernel.State
		var scopeCtx context.Context
		s := load(t, k, kernel.Plugin{Name: "p", Apply: func(ctx context.Context, s *kernel.Scope) error {
			during, scopeCtx = s.State(), s.Context()
			return nil
		}})
		if during != kernel.Loading {
			t.Errorf("state during apply = %v, want LOADING", during)
		}
		if got := s.State(); got != kernel.Active {
			t.Errorf("state after load = %v, want ACTIVE", got)
		}
		if isDone(scopeCtx) {
			t.Error("the scope's context is done while it is active")
		}
		if err := k.Unload("p"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if got := s.State(); got != kernel.Disposed {
			t.Errorf("state after unload = %v, want DISPOSED", got)
		}
		if !isDone(scopeCtx) {
			t.Error("the scope's context is not cancelled after unload")
		}
		if _, ok := k.Scope("p"); ok {
			t.Error("the kernel still knows p after unload")
		}
		want := []kernel.State{kernel.Pending, kernel.Loading, kernel.Active, kernel.Unloading, kernel.Disposed}
		if got := rec.states("p"); !slices.Equal(got, want) {
			t.Errorf("state events = %v, want %v", got, want)
		}
		checkChain(t, rec.of("p"))
		for _, c := range rec.of("p") {
			if c.Err != nil {
				t.Errorf("change to %v carries error %v", c.To, c.Err)
			}
		}
	})

	for _, tc := range []struct {
		name    string
		fail    func() error
		wantErr string
		is      error
	}{
		{name: "apply error fails and undoes what it registered", fail: func() error { return errBoom }, wantErr: "boom", is: errBoom},
		{name: "apply panic fails and undoes what it registered", fail: func() error { panic("kaboom") }, wantErr: "kaboom"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := newKernel(t)
			rec := recordStates(t, k)
			var undone counter
			var scopeCtx context.Context
			s, err := k.Load(kernel.Plugin{Name: "p", Apply: func(ctx context.Context, s *kernel.Scope) error {
				scopeCtx = ctx
				must(t)(s.Track("custom", func() error { undone.inc(); return nil }))
				must(t)(s.On("ev", func(context.Context, any, kernel.Next) (any, error) { return nil, nil }))
				must(t)(s.Contribute("pt", "key", 0, 1))
				must(t)(s.Provide("svc", 1))
				return tc.fail()
			}})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("load error = %v, want one containing %q", err, tc.wantErr)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("load error %v does not wrap %v", err, tc.is)
			}
			if s == nil {
				t.Fatal("load returned no scope")
			}
			if got := s.State(); got != kernel.Failed {
				t.Errorf("state = %v, want FAILED", got)
			}
			if s.Err() == nil || !strings.Contains(s.Err().Error(), tc.wantErr) {
				t.Errorf("Scope.Err = %v, want one containing %q", s.Err(), tc.wantErr)
			}
			if tc.is != nil && !errors.Is(s.Err(), tc.is) {
				t.Errorf("Scope.Err %v does not wrap %v", s.Err(), tc.is)
			}
			if got := undone.get(); got != 1 {
				t.Errorf("tracked undo ran %d times, want 1", got)
			}
			if n := k.Events().Count("ev"); n != 0 {
				t.Errorf("%d listeners of ev left", n)
			}
			if k.Points().Exists("pt") {
				t.Error("the contribution to pt is still there")
			}
			if !isDone(scopeCtx) {
				t.Error("the scope's context is not cancelled")
			}
			si := info(t, k, "p")
			if si.State != kernel.Failed || !strings.Contains(si.LastError, tc.wantErr) {
				t.Errorf("Describe = %+v, want FAILED with last error containing %q", si, tc.wantErr)
			}
			if len(si.Effects) != 0 || len(si.Provides) != 0 {
				t.Errorf("Describe still lists effects %v and provides %v", si.Effects, si.Provides)
			}
			// The service it provided went with it: a dependent waits.
			dep := load(t, k, kernel.Plugin{Name: "dep", Inject: []string{"svc"}, Apply: noop})
			if got := dep.State(); got != kernel.Pending {
				t.Errorf("a dependent of the failed provider is %v, want PENDING", got)
			}

			want := []kernel.State{kernel.Pending, kernel.Loading, kernel.Unloading, kernel.Failed}
			if got := rec.states("p"); !slices.Equal(got, want) {
				t.Errorf("state events = %v, want %v", got, want)
			}
			checkChain(t, rec.of("p"))
			if ch := rec.of("p"); len(ch) > 0 {
				last := ch[len(ch)-1]
				if last.Err == nil || !strings.Contains(last.Err.Error(), tc.wantErr) {
					t.Errorf("FAILED event carries %v, want the apply error", last.Err)
				}
			}

			// A failed plugin stays known (the CLI shows it) until unloaded.
			if err := k.Unload("p"); err != nil {
				t.Fatalf("unload a failed plugin: %v", err)
			}
			if got := s.State(); got != kernel.Disposed {
				t.Errorf("state after unloading a failed plugin = %v, want DISPOSED", got)
			}
			if got := undone.get(); got != 1 {
				t.Errorf("tracked undo ran %d times after unload, want 1", got)
			}
		})
	}

	t.Run("load of a duplicate name errors", func(t *testing.T) {
		k, _ := newKernel(t)
		var applied counter
		p := kernel.Plugin{Name: "p", Apply: func(context.Context, *kernel.Scope) error { applied.inc(); return nil }}
		first := load(t, k, p)
		second, err := k.Load(p)
		if err == nil || !strings.Contains(err.Error(), "p") {
			t.Fatalf("second load error = %v, want one naming p", err)
		}
		if second != nil {
			t.Error("second load returned a scope")
		}
		if first.State() != kernel.Active || applied.get() != 1 {
			t.Errorf("first scope is %v after %d applies, want ACTIVE after 1", first.State(), applied.get())
		}
		if s, _ := k.Scope("p"); s != first {
			t.Error("Kernel.Scope no longer returns the first scope")
		}
	})

	for _, tc := range []struct {
		name string
		p    kernel.Plugin
	}{
		{name: "load without a name errors", p: kernel.Plugin{Apply: noop}},
		{name: "load without an apply step errors", p: kernel.Plugin{Name: "p"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := newKernel(t)
			if _, err := k.Load(tc.p); err == nil {
				t.Fatal("load succeeded")
			}
			if n := len(k.Describe()); n != 0 {
				t.Errorf("Describe lists %d scopes", n)
			}
		})
	}

	t.Run("unload of an unknown plugin errors", func(t *testing.T) {
		k, _ := newKernel(t)
		if err := k.Unload("nobody"); err == nil || !strings.Contains(err.Error(), "nobody") {
			t.Fatalf("unload error = %v, want one naming nobody", err)
		}
	})

	t.Run("unload of a pending plugin disposes it without applying", func(t *testing.T) {
		k, _ := newKernel(t)
		rec := recordStates(t, k)
		var applied counter
		s := load(t, k, kernel.Plugin{Name: "p", Inject: []string{"index"}, Apply: func(context.Context, *kernel.Scope) error { applied.inc(); return nil }})
		if err := k.Unload("p"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if s.State() != kernel.Disposed || applied.get() != 0 {
			t.Errorf("state %v after %d applies, want DISPOSED after none", s.State(), applied.get())
		}
		want := []kernel.State{kernel.Pending, kernel.Unloading, kernel.Disposed}
		if got := rec.states("p"); !slices.Equal(got, want) {
			t.Errorf("state events = %v, want %v", got, want)
		}
		// Its provider arriving later loads nothing.
		load(t, k, kernel.Plugin{Name: "index", Apply: func(_ context.Context, s *kernel.Scope) error {
			_, err := s.Provide("index", 1)
			return err
		}})
		if applied.get() != 0 {
			t.Error("a disposed plugin was applied")
		}
	})

	t.Run("unload while loading cancels the apply and disposes", func(t *testing.T) {
		k, _ := newKernel(t)
		ctx := testkit.ContextFor(t, 10*time.Second)
		rec := recordStates(t, k)
		var undone counter
		started := make(chan struct{})
		loaded := make(chan error, 1)
		go func() {
			_, err := k.Load(kernel.Plugin{Name: "slow", Apply: func(ctx context.Context, s *kernel.Scope) error {
				if _, err := s.Track("custom", func() error { undone.inc(); return nil }); err != nil {
					return err
				}
				close(started)
				<-ctx.Done() // released by Unload
				return ctx.Err()
			}})
			loaded <- err
		}()
		waitFor(t, ctx, started, "the apply to start")
		if err := k.Unload("slow"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if err := waitFor(t, ctx, loaded, "load to return"); err != nil {
			t.Errorf("load of a plugin unloaded while loading = %v, want nil (it was disposed, not failed)", err)
		}
		if _, ok := k.Scope("slow"); ok {
			t.Error("the kernel still knows slow")
		}
		if got := undone.get(); got != 1 {
			t.Errorf("undo ran %d times, want 1", got)
		}
		want := []kernel.State{kernel.Pending, kernel.Loading, kernel.Unloading, kernel.Disposed}
		if got := rec.states("slow"); !slices.Equal(got, want) {
			t.Errorf("state events = %v, want %v", got, want)
		}
	})

	t.Run("load reports its own apply error, not that of a plugin it unblocked", func(t *testing.T) {
		k, _ := newKernel(t)
		dep := load(t, k, kernel.Plugin{Name: "dep", Inject: []string{"index"}, Apply: func(context.Context, *kernel.Scope) error { return errBoom }})
		prov, err := k.Load(provider("indexer", "index", 1, nil))
		if err != nil {
			t.Errorf("load of the provider = %v, want nil (it loaded)", err)
		}
		if prov == nil || prov.State() != kernel.Active {
			t.Fatalf("provider = %v, want an ACTIVE scope", prov)
		}
		if dep.State() != kernel.Failed || !errors.Is(dep.Err(), errBoom) {
			t.Errorf("dependent = %v with %v, want FAILED with boom", dep.State(), dep.Err())
		}
	})

	t.Run("a state listener may read the kernel", func(t *testing.T) {
		// No newKernel: if this deadlocks, Close would hang the cleanup too.
		k := kernel.New(nil)
		ctx := testkit.ContextFor(t, 10*time.Second)
		var tr trail
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = k.Load(kernel.Plugin{Name: "observer", Apply: func(_ context.Context, s *kernel.Scope) error {
				_, err := s.On(kernel.EventStateChanged, func(_ context.Context, payload any, _ kernel.Next) (any, error) {
					c := payload.(kernel.StateChange)
					if c.Plugin == "observer" {
						return nil, nil
					}
					// The scope may already be gone from the kernel when it
					// is DISPOSED; while listed, it shows the new state.
					for _, si := range k.Describe() {
						if si.Name == c.Plugin && si.State != c.To {
							tr.add(fmt.Sprintf("Describe shows %v during the change to %v", si.State, c.To))
						}
					}
					if s, ok := k.Scope(c.Plugin); ok && s.State() != c.To {
						tr.add(fmt.Sprintf("Scope shows %v during the change to %v", s.State(), c.To))
					}
					tr.add(c.To.String())
					return nil, nil
				})
				return err
			}})
			_, _ = k.Load(kernel.Plugin{Name: "p", Apply: noop})
			_ = k.Unload("p")
		}()
		select {
		case <-done:
		case <-ctx.Done():
			t.Fatal("deadlock: a state listener reading the kernel blocked it")
		}
		k.Close()
		want := []string{"PENDING", "LOADING", "ACTIVE", "UNLOADING", "DISPOSED"}
		if got := tr.get(); !slices.Equal(got, want) {
			t.Errorf("the listener saw %q, want %q", got, want)
		}
	})

	t.Run("close unloads newest first", func(t *testing.T) {
		k, _ := newKernel(t)
		var tr trail
		for _, name := range []string{"a", "b", "c"} {
			load(t, k, kernel.Plugin{Name: name, Apply: func(_ context.Context, s *kernel.Scope) error {
				_, err := s.Track("mark", func() error { tr.add(s.Name()); return nil })
				return err
			}})
		}
		k.Close()
		if got, want := tr.get(), []string{"c", "b", "a"}; !slices.Equal(got, want) {
			t.Errorf("undo order = %v, want %v", got, want)
		}
		if n := len(k.Describe()); n != 0 {
			t.Errorf("Describe lists %d scopes after close", n)
		}
	})
}

// TestRegistrationAfterEnd checks that a scope which has ended (unloaded, or
// failed) refuses every kind of registration with ErrScopeEnded, leaving
// nothing behind: nothing may outlive its scope.
func TestRegistrationAfterEnd(t *testing.T) {
	type world struct {
		k       *kernel.Kernel
		undone  *counter
		watched *counter
	}
	regs := []struct {
		name     string
		setup    func(t *testing.T, k *kernel.Kernel)
		register func(w world, s *kernel.Scope) (*kernel.Effect, error)
		left     func(w world) string // what was left behind, "" for nothing
		// probe is the state of a plugin injecting the service "late".
		probe kernel.State
	}{
		{
			name: "track runs the undo at once",
			register: func(w world, s *kernel.Scope) (*kernel.Effect, error) {
				return s.Track("late", func() error { w.undone.inc(); return nil })
			},
			left: func(w world) string {
				if n := w.undone.get(); n != 1 {
					return fmt.Sprintf("the undo ran %d times, want once", n)
				}
				return ""
			},
		},
		{
			name: "on adds no listener",
			register: func(w world, s *kernel.Scope) (*kernel.Effect, error) {
				return s.On("late", func(context.Context, any, kernel.Next) (any, error) { return nil, nil })
			},
			left: func(w world) string {
				if w.k.Events().Count("late") != 0 {
					return "a listener of late"
				}
				return ""
			},
		},
		{
			name: "contribute leaves no contribution and wakes no watcher",
			register: func(w world, s *kernel.Scope) (*kernel.Effect, error) {
				return s.Contribute("late", "k", 0, 1)
			},
			left: func(w world) string {
				if w.k.Points().Exists("late") {
					return "a contribution to late"
				}
				if n := w.watched.get(); n != 0 {
					return "a watcher of late was woken"
				}
				return ""
			},
		},
		{
			name: "contribute to a unique key another plugin holds says the scope ended",
			setup: func(t *testing.T, k *kernel.Kernel) {
				k.Points().DeclareUnique("late")
				load(t, k, kernel.Plugin{Name: "holder", Apply: func(_ context.Context, s *kernel.Scope) error {
					_, err := s.Contribute("late", "k", 0, "holder's")
					return err
				}})
			},
			register: func(w world, s *kernel.Scope) (*kernel.Effect, error) {
				return s.Contribute("late", "k", 0, 1)
			},
			left: func(w world) string {
				if all := w.k.Points().All("late"); len(all) != 1 || all[0].Owner != "holder" {
					return "late holds something other than holder's contribution"
				}
				return ""
			},
		},
		{
			name: "provide provides nothing",
			register: func(w world, s *kernel.Scope) (*kernel.Effect, error) {
				return s.Provide("late", 1)
			},
			left: func(w world) string {
				for _, si := range w.k.Describe() {
					if si.Name == "probe" && len(si.Waiting) == 0 {
						return "the service late is provided"
					}
				}
				return ""
			},
		},
		{
			name: "provide of a name another plugin holds says the scope ended",
			setup: func(t *testing.T, k *kernel.Kernel) {
				load(t, k, kernel.Plugin{Name: "holder", Apply: func(_ context.Context, s *kernel.Scope) error {
					_, err := s.Provide("late", "holder's")
					return err
				}})
			},
			register: func(w world, s *kernel.Scope) (*kernel.Effect, error) {
				return s.Provide("late", 1)
			},
			probe: kernel.Active,
		},
	}
	ends := []struct {
		name string
		end  func(t *testing.T, k *kernel.Kernel) *kernel.Scope
	}{
		{name: "after unload", end: func(t *testing.T, k *kernel.Kernel) *kernel.Scope {
			s := load(t, k, kernel.Plugin{Name: "p", Apply: noop})
			if err := k.Unload("p"); err != nil {
				t.Fatalf("unload: %v", err)
			}
			return s
		}},
		{name: "after a failed apply", end: func(t *testing.T, k *kernel.Kernel) *kernel.Scope {
			s, err := k.Load(kernel.Plugin{Name: "p", Apply: func(context.Context, *kernel.Scope) error { return errBoom }})
			if !errors.Is(err, errBoom) {
				t.Fatalf("load error = %v, want boom", err)
			}
			return s
		}},
	}
	for _, end := range ends {
		for _, reg := range regs {
			t.Run(end.name+"/"+reg.name, func(t *testing.T) {
				k, _ := newKernel(t)
				w := world{k: k, undone: &counter{}, watched: &counter{}}
				if reg.setup != nil {
					reg.setup(t, k)
				}
				stop := k.Points().Watch("late", w.watched.inc)
				defer stop()
				load(t, k, kernel.Plugin{Name: "probe", Inject: []string{"late"}, Apply: noop})
				s := end.end(t, k)
				e, err := reg.register(w, s)
				if !errors.Is(err, kernel.ErrScopeEnded) {
					t.Errorf("registration error = %v, want ErrScopeEnded", err)
				}
				if e != nil {
					t.Error("registration returned an effect")
				}
				if reg.left != nil {
					if left := reg.left(w); left != "" {
						t.Errorf("left behind: %s", left)
					}
				}
				// Whatever was registered and withdrawn, a later
				// reconciliation does not disturb anyone.
				load(t, k, kernel.Plugin{Name: "later", Apply: noop})
				if si := info(t, k, "probe"); si.State != reg.probe {
					t.Errorf("probe (injects late) is %v, want %v", si.State, reg.probe)
				}
			})
		}
	}
}
