package kernel_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
)

// versioned is a plugin whose every apply is a new version: it contributes
// its version under keys "a" and "b" of the unique point "reg", listens to
// "ping", and tracks a "process" whose stop is recorded.
type versioned struct {
	version atomic.Int64
	fail    atomic.Bool // the next applies fail after registering
	gate    chan struct{}
	stops   trail
	pings   trail
}

func (v *versioned) plugin(name string) kernel.Plugin {
	return kernel.Plugin{Name: name, Apply: func(ctx context.Context, s *kernel.Scope) error {
		n := v.version.Add(1)
		if _, err := s.Track(fmt.Sprint("process v", n), func() error { v.stops.add(fmt.Sprint("v", n)); return nil }); err != nil {
			return err
		}
		for _, key := range []string{"a", "b"} {
			if _, err := s.Contribute("reg", key, 0, n); err != nil {
				return err
			}
		}
		if _, err := s.On("ping", func(context.Context, any, kernel.Next) (any, error) {
			v.pings.add(fmt.Sprint("v", n))
			return nil, nil
		}); err != nil {
			return err
		}
		if v.gate != nil {
			select {
			case <-v.gate:
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if v.fail.Load() {
			return errBoom
		}
		return nil
	}}
}

// regValues returns the versions under "a" and "b", read in one step.
func regValues(k *kernel.Kernel) []any {
	return values(k.Points().AllOf("reg")["reg"])
}

func TestReload(t *testing.T) {
	t.Run("every reader sees one whole version, never a gap or a mix", func(t *testing.T) {
		k, _ := newKernel(t)
		k.Points().DeclareUnique("reg")
		v := &versioned{}
		load(t, k, v.plugin("p"))
		states := recordStates(t, k)

		stop := make(chan struct{})
		var wg sync.WaitGroup
		var bad atomic.Value
		for range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					got := regValues(k)
					if len(got) != 2 || got[0] != got[1] {
						bad.Store(fmt.Sprint(got))
					}
				}
			}()
		}
		for range 20 {
			if err := k.Reload("p"); err != nil {
				t.Fatalf("reload: %v", err)
			}
		}
		close(stop)
		wg.Wait()
		if b := bad.Load(); b != nil {
			t.Fatalf("a reader saw %v", b)
		}
		if got := regValues(k); got[0] != int64(21) {
			t.Fatalf("after 20 reloads the point holds %v, want version 21", got)
		}
		// Each old version's process stopped once, after its successor
		// took over; the current one still runs.
		if got := v.stops.get(); len(got) != 20 || got[0] != "v1" || got[19] != "v20" {
			t.Fatalf("stopped %v, want v1..v20", got)
		}
		k.Events().Emit(context.Background(), "ping", nil)
		if got := v.pings.get(); len(got) != 1 || got[0] != "v21" {
			t.Fatalf("ping reached %v, want only v21", got)
		}
		// The plugin never left ACTIVE as far as anyone could see.
		changes := states.of("p")
		if len(changes) != 20 {
			t.Fatalf("%d state changes for 20 reloads", len(changes))
		}
		for _, c := range changes {
			if c.From != kernel.Active || c.To != kernel.Active {
				t.Fatalf("a reload showed a state change %v→%v", c.From, c.To)
			}
		}
		if si := info(t, k, "p"); si.State != kernel.Active || len(si.Effects) != 4 {
			t.Fatalf("after reloads: %+v", si)
		}
	})

	t.Run("a failed apply leaves the old version serving and shows nothing of the new", func(t *testing.T) {
		k, _ := newKernel(t)
		k.Points().DeclareUnique("reg")
		v := &versioned{}
		load(t, k, v.plugin("p"))
		v.fail.Store(true)
		err := k.Reload("p")
		if err == nil || !strings.Contains(err.Error(), "reload p") || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("reload error = %v", err)
		}
		if got := regValues(k); got[0] != int64(1) || got[1] != int64(1) {
			t.Fatalf("point = %v, want version 1", got)
		}
		if got := v.stops.get(); len(got) != 1 || got[0] != "v2" {
			t.Fatalf("stopped %v, want the failed v2 only", got)
		}
		k.Events().Emit(context.Background(), "ping", nil)
		if got := v.pings.get(); len(got) != 1 || got[0] != "v1" {
			t.Fatalf("ping reached %v, want v1", got)
		}
		if si := info(t, k, "p"); si.State != kernel.Active {
			t.Fatalf("state %v", si.State)
		}
	})

	t.Run("a second reload while one stages is refused; unload aborts the staged one", func(t *testing.T) {
		k, _ := newKernel(t)
		k.Points().DeclareUnique("reg")
		v := &versioned{}
		load(t, k, v.plugin("p"))
		v.gate = make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- k.Reload("p") }()
		waitUntil(t, func() bool { return v.version.Load() == 2 })
		if err := k.Reload("p"); err == nil || !strings.Contains(err.Error(), "in progress") {
			t.Fatalf("second reload: %v", err)
		}
		if err := k.Unload("p"); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err == nil || !strings.Contains(err.Error(), "unloaded") {
			t.Fatalf("staged reload: %v", err)
		}
		if got := regValues(k); len(got) != 0 {
			t.Fatalf("point after unload: %v", got)
		}
		if got := v.stops.get(); len(got) != 2 {
			t.Fatalf("stopped %v, want both versions", got)
		}
	})

	t.Run("a crash of the old version while the new one stages: the new one takes over", func(t *testing.T) {
		k, _ := newKernel(t)
		k.Points().DeclareUnique("reg")
		v := &versioned{}
		s := load(t, k, v.plugin("p"))
		states := recordStates(t, k)
		v.gate = make(chan struct{})
		done := make(chan error, 1)
		go func() { done <- k.Reload("p") }()
		waitUntil(t, func() bool { return v.version.Load() == 2 })
		if err := s.Restart(errBoom); err != nil {
			t.Fatal(err)
		}
		if got := regValues(k); len(got) != 0 {
			t.Fatalf("the crashed version's registrations remain: %v", got)
		}
		if v.version.Load() != 2 {
			t.Fatal("the crashed version was started again while a reload staged its successor")
		}
		close(v.gate)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if got := regValues(k); got[0] != int64(2) {
			t.Fatalf("point = %v, want version 2", got)
		}
		checkChain(t, states.of("p"))
		if got := states.states("p"); !slices.Equal(got, []kernel.State{kernel.Unloading, kernel.Pending, kernel.Loading, kernel.Active}) {
			t.Fatalf("states %v", got)
		}
		// The crashed scope's Restart is now a no-op: it is not current.
		if err := s.Restart(errBoom); err != nil || regValues(k)[0] != int64(2) {
			t.Fatalf("a retired scope's restart changed something: %v", err)
		}
	})

	t.Run("a crash of the staged version fails the reload", func(t *testing.T) {
		k, _ := newKernel(t)
		k.Points().DeclareUnique("reg")
		var staged atomic.Pointer[kernel.Scope]
		v := &versioned{}
		base := v.plugin("p")
		gate := make(chan struct{})
		p := kernel.Plugin{Name: "p", Apply: func(ctx context.Context, s *kernel.Scope) error {
			if err := base.Apply(ctx, s); err != nil {
				return err
			}
			if v.version.Load() == 2 {
				staged.Store(s)
				<-gate
			}
			return nil
		}}
		load(t, k, p)
		done := make(chan error, 1)
		go func() { done <- k.Reload("p") }()
		waitUntil(t, func() bool { return staged.Load() != nil })
		_ = staged.Load().Restart(errBoom)
		close(gate)
		if err := <-done; err == nil || !strings.Contains(err.Error(), "boom") {
			t.Fatalf("reload: %v", err)
		}
		if got := regValues(k); got[0] != int64(1) {
			t.Fatalf("point = %v, want version 1", got)
		}
	})

	t.Run("a plugin that is starting has that start stopped and runs the new definition", func(t *testing.T) {
		k, _ := newKernel(t)
		waiting := make(chan struct{})
		loaded := make(chan error, 1)
		go func() {
			// Its apply waits, as a crash loop's backoff does, until
			// its scope ends.
			_, err := k.Load(kernel.Plugin{Name: "p", Apply: func(ctx context.Context, s *kernel.Scope) error {
				close(waiting)
				<-ctx.Done()
				return ctx.Err()
			}})
			loaded <- err
		}()
		<-waiting
		err := k.Replace(kernel.Plugin{Name: "p", Apply: func(_ context.Context, s *kernel.Scope) error {
			_, err := s.Contribute("reg", "", 0, "new")
			return err
		}})
		if err != nil {
			t.Fatal(err)
		}
		<-loaded
		if si := info(t, k, "p"); si.State != kernel.Active {
			t.Fatalf("state %v", si.State)
		}
		if got := values(k.Points().All("reg")); len(got) != 1 || got[0] != "new" {
			t.Fatalf("point = %v", got)
		}
	})

	t.Run("a failed plugin is started again", func(t *testing.T) {
		k, _ := newKernel(t)
		v := &versioned{}
		v.fail.Store(true)
		if _, err := k.Load(v.plugin("p")); err == nil {
			t.Fatal("want a failed load")
		}
		v.fail.Store(false)
		if err := k.Reload("p"); err != nil {
			t.Fatal(err)
		}
		if si := info(t, k, "p"); si.State != kernel.Active {
			t.Fatalf("state %v", si.State)
		}
	})

	t.Run("dependents of a reloaded provider are rebuilt against the new one, without a gap", func(t *testing.T) {
		k, _ := newKernel(t)
		var gen atomic.Int64
		load(t, k, kernel.Plugin{Name: "prov", Apply: func(_ context.Context, s *kernel.Scope) error {
			_, err := s.Provide("svc", gen.Add(1))
			return err
		}})
		d := &dependent{}
		load(t, k, d.plugin("dep", "svc"))
		stop := make(chan struct{})
		var gap atomic.Bool
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				if !k.Points().Exists("deps") {
					gap.Store(true)
				}
			}
		}()
		err := k.Reload("prov")
		close(stop)
		wg.Wait()
		if err != nil {
			t.Fatal(err)
		}
		if got := d.applies(); len(got) != 2 || got[1] != int64(2) {
			t.Fatalf("dependent saw %v, want [1 2]", got)
		}
		if gap.Load() {
			t.Fatal("the dependent's contribution was missing during the reload")
		}
		if !isDone(d.ctx(0)) || isDone(d.ctx(1)) {
			t.Fatal("the old dependent's scope should have ended, the new one's not")
		}
	})

	t.Run("a new definition replaces the old only if it starts", func(t *testing.T) {
		k, _ := newKernel(t)
		load(t, k, kernel.Plugin{Name: "p", Apply: func(_ context.Context, s *kernel.Scope) error {
			_, err := s.Contribute("reg", "", 0, "old")
			return err
		}})
		err := k.Replace(kernel.Plugin{Name: "p", Inject: []string{"missing"}, Apply: func(_ context.Context, s *kernel.Scope) error {
			_, err := s.Service("missing")
			return err
		}})
		if err == nil || !strings.Contains(err.Error(), "not provided") {
			t.Fatalf("replace with a missing service: %v", err)
		}
		if err := k.Replace(kernel.Plugin{Name: "p", Apply: func(_ context.Context, s *kernel.Scope) error {
			_, err := s.Contribute("reg", "", 0, "new")
			return err
		}}); err != nil {
			t.Fatal(err)
		}
		if got := values(k.Points().All("reg")); len(got) != 1 || got[0] != "new" {
			t.Fatalf("point = %v", got)
		}
		if err := k.Reload("p"); err != nil {
			t.Fatal(err)
		}
		if got := values(k.Points().All("reg")); len(got) != 1 || got[0] != "new" {
			t.Fatalf("a reload after a replace went back to the old definition: %v", got)
		}
	})
}

// waitUntil polls cond for up to ten seconds.
func waitUntil(t *testing.T, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, 10*time.Second, "the condition", cond)
}
