package kernel_test

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
)

// finish waits for wg, failing the test as a deadlock when ctx ends first.
func finish(t *testing.T, ctx context.Context, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	select {
	case <-done:
	case <-ctx.Done():
		buf := make([]byte, 1<<20)
		t.Fatalf("deadlock: workers still running after the timeout\n%s", buf[:runtime.Stack(buf, true)])
	}
}

// checkEmpty fails when anything outlived the plugins: a scope, a
// contribution, a listener.
func checkEmpty(t *testing.T, k *kernel.Kernel, points, events []string) {
	t.Helper()
	if left := k.Describe(); len(left) != 0 {
		t.Errorf("%d scopes left after close, the first: %+v", len(left), left[0])
	}
	for _, pt := range points {
		if all := k.Points().All(pt); len(all) != 0 {
			t.Errorf("point %s outlived its plugins: %d contributions, the first by %s", pt, len(all), all[0].Owner)
		}
	}
	for _, ev := range events {
		if n := k.Events().Count(ev); n != 0 {
			t.Errorf("%d listeners of %s outlived their plugins", n, ev)
		}
	}
}

func TestConcurrency(t *testing.T) {
	const (
		workers = 8
		rounds  = 60
	)

	t.Run("plugins load and unload while effects come and go", func(t *testing.T) {
		k, _ := newKernel(t)
		ctx := testkit.ContextFor(t, 60*time.Second)
		rec := recordStates(t, k)
		host := load(t, k, kernel.Plugin{Name: "host", Apply: noop})
		nop := func(ctx context.Context, _ any, next kernel.Next) (any, error) {
			if next != nil {
				return next(ctx)
			}
			return nil, nil
		}
		var wg sync.WaitGroup

		// A provider that comes and goes.
		wg.Go(func() {
			for i := range rounds {
				if _, err := k.Load(provider("indexer", "index", i, nil)); err != nil {
					t.Errorf("load indexer: %v", err)
					return
				}
				runtime.Gosched()
				if err := k.Unload("indexer"); err != nil {
					t.Errorf("unload indexer: %v", err)
					return
				}
			}
		})
		// Dependents loading and unloading, each under its own name; they
		// are rebuilt whenever the provider comes and goes.
		for w := range workers {
			wg.Go(func() {
				name := fmt.Sprintf("dep-%d", w)
				for range rounds {
					if _, err := k.Load(kernel.Plugin{Name: name, Inject: []string{"index"}, Apply: func(_ context.Context, s *kernel.Scope) error {
						v, err := s.Service("index")
						if err != nil {
							return err
						}
						if _, err := s.Contribute("deps", name, 0, v); err != nil {
							return err
						}
						_, err = s.On("tick", nop)
						return err
					}}); err != nil {
						t.Errorf("load %s: %v", name, err)
						return
					}
					runtime.Gosched()
					if err := k.Unload(name); err != nil {
						t.Errorf("unload %s: %v", name, err)
						return
					}
				}
			})
		}
		// Effects registered and disposed on a live scope, with dispatches
		// and descriptions in between.
		for w := range workers {
			wg.Go(func() {
				for i := range rounds {
					c, err := host.Contribute("host-point", fmt.Sprint(w), i, i)
					if err != nil {
						t.Errorf("contribute: %v", err)
						return
					}
					l, err := host.On("tick", nop)
					if err != nil {
						t.Errorf("on: %v", err)
						return
					}
					k.Events().Emit(ctx, "tick", i)
					if _, err := k.Events().Waterfall(ctx, "tick", i, nil); err != nil {
						t.Errorf("waterfall: %v", err)
					}
					_ = k.Describe()
					_ = k.Points().All("deps")
					if err := l.Undo(); err != nil {
						t.Errorf("undo: %v", err)
					}
					if err := c.Undo(); err != nil {
						t.Errorf("undo: %v", err)
					}
				}
			})
		}
		finish(t, ctx, &wg)

		if n := len(info(t, k, "host").Effects); n != 0 {
			t.Errorf("host has %d effects left after disposing them all", n)
		}
		// A dependent's apply fails only if its service vanished under it,
		// which must send it back to PENDING, never to FAILED.
		for _, c := range rec.all() {
			if c.To == kernel.Failed {
				t.Errorf("%s failed: %v", c.Plugin, c.Err)
			}
		}
		for _, si := range k.Describe() {
			if si.Name != "observer" && si.Name != "host" {
				t.Errorf("scope left after every worker unloaded its own: %+v", si)
			}
		}
		k.Close()
		checkEmpty(t, k, []string{"deps", "host-point"}, []string{"tick", kernel.EventStateChanged})
		for _, name := range []string{"host", "observer"} {
			checkChain(t, rec.of(name))
		}
	})

	t.Run("one name loaded and unloaded from many goroutines", func(t *testing.T) {
		k, _ := newKernel(t)
		ctx := testkit.ContextFor(t, 60*time.Second)
		var registered, undone counter
		p := kernel.Plugin{Name: "same", Apply: func(_ context.Context, s *kernel.Scope) error {
			if _, err := s.Contribute("same-point", "", 0, 1); err != nil {
				return err
			}
			registered.inc()
			_, err := s.Track("count", func() error { undone.inc(); return nil })
			runtime.Gosched() // let an Unload find it LOADING
			return err
		}}
		var wg sync.WaitGroup
		for range workers {
			wg.Go(func() {
				for range rounds {
					_, _ = k.Load(p)     // a duplicate is expected now and then
					_ = k.Unload("same") // so is "no such plugin"
				}
			})
		}
		finish(t, ctx, &wg)
		k.Close()
		checkEmpty(t, k, []string{"same-point"}, nil)
		if registered.get() != undone.get() {
			t.Errorf("%d applies registered, %d were undone", registered.get(), undone.get())
		}
	})

	t.Run("effects of one scope registered and disposed concurrently with its unload", func(t *testing.T) {
		for round := range rounds {
			k, _ := newKernel(t)
			ctx := testkit.ContextFor(t, 60*time.Second)
			s := load(t, k, kernel.Plugin{Name: "p", Apply: noop})
			var registered, undone counter
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for range 20 {
						e, err := s.Track("e", func() error { undone.inc(); return nil })
						registered.inc()
						if err != nil {
							continue // ended: undone at once
						}
						if err := e.Undo(); err != nil {
							t.Errorf("undo: %v", err)
						}
					}
				})
			}
			wg.Go(func() {
				if err := k.Unload("p"); err != nil {
					t.Errorf("unload: %v", err)
				}
			})
			finish(t, ctx, &wg)
			if registered.get() != undone.get() {
				t.Fatalf("round %d: %d effects registered, %d undone", round, registered.get(), undone.get())
			}
		}
	})
}
