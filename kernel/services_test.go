package kernel_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
)

// fakeBinder is a Binder whose behaviour is a function field.
type fakeBinder struct {
	bind func(consumer *kernel.Scope) any
}

func (b fakeBinder) Bind(consumer *kernel.Scope) any { return b.bind(consumer) }

var _ kernel.Binder = fakeBinder{}

// registrar is the view a registry service hands one consumer.
type registrar struct {
	register func(key string, value any) (*kernel.Effect, error)
}

// registryService is a Binder: what a consumer registers through it lands in
// the point "registered" as the consumer's own effect.
func registryService() fakeBinder {
	return fakeBinder{bind: func(consumer *kernel.Scope) any {
		return registrar{register: func(key string, value any) (*kernel.Effect, error) {
			return consumer.Contribute("registered", key, 0, value)
		}}
	}}
}

// provider returns a plugin that provides service with value; the provide
// effect is sent on keep when keep is not nil.
func provider(name, service string, value any, keep chan<- *kernel.Effect) kernel.Plugin {
	return kernel.Plugin{Name: name, Apply: func(_ context.Context, s *kernel.Scope) error {
		e, err := s.Provide(service, value)
		if err == nil && keep != nil {
			keep <- e
		}
		return err
	}}
}

// dependent is a fake plugin that reads the first service it injects and
// contributes what it read to the point "deps", recording every apply.
type dependent struct {
	mu   sync.Mutex
	seen []any
	ctxs []context.Context
}

func (d *dependent) plugin(name string, inject ...string) kernel.Plugin {
	return kernel.Plugin{Name: name, Inject: inject, Apply: func(ctx context.Context, s *kernel.Scope) error {
		v, err := s.Service(inject[0])
		if err != nil {
			return err
		}
		d.mu.Lock()
		d.seen = append(d.seen, v)
		d.ctxs = append(d.ctxs, ctx)
		d.mu.Unlock()
		_, err = s.Contribute("deps", name, 0, v)
		return err
	}}
}

func (d *dependent) applies() []any {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.seen)
}

func (d *dependent) ctx(i int) context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.ctxs[i]
}

func TestServices(t *testing.T) {
	t.Run("a plugin that injects a service stays pending until it is provided", func(t *testing.T) {
		k, _ := newKernel(t)
		var d dependent
		dep := load(t, k, d.plugin("dep", "index"))
		if got := dep.State(); got != kernel.Pending {
			t.Fatalf("state = %v, want PENDING", got)
		}
		if len(d.applies()) != 0 {
			t.Fatal("apply ran without its service")
		}
		if got := info(t, k, "dep").Waiting; !slices.Equal(got, []string{"index"}) {
			t.Errorf("waiting = %v, want [index]", got)
		}
		load(t, k, provider("indexer", "index", "v1", nil))
		if got := dep.State(); got != kernel.Active {
			t.Fatalf("state after the provider loaded = %v, want ACTIVE", got)
		}
		if got := d.applies(); !slices.Equal(got, []any{"v1"}) {
			t.Errorf("applies saw %v, want [v1]", got)
		}
		if c, ok := k.Points().Get("deps", "dep"); !ok || c.Owner != "dep" {
			t.Errorf("the dependent's contribution = %+v, %v", c, ok)
		}
		if got := info(t, k, "dep").Waiting; len(got) != 0 {
			t.Errorf("waiting = %v, want none", got)
		}
	})

	t.Run("when the provider unloads the dependent goes back to pending without its effects", func(t *testing.T) {
		k, _ := newKernel(t)
		rec := recordStates(t, k)
		var d dependent
		load(t, k, provider("indexer", "index", "v1", nil))
		dep := load(t, k, d.plugin("dep", "index"))
		if err := k.Unload("indexer"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if got := dep.State(); got != kernel.Pending {
			t.Errorf("state = %v, want PENDING", got)
		}
		if k.Points().Exists("deps") {
			t.Error("the dependent's contribution outlived its provider")
		}
		if !isDone(d.ctx(0)) {
			t.Error("the dependent's context was not cancelled")
		}
		want := []kernel.State{kernel.Pending, kernel.Loading, kernel.Active, kernel.Unloading, kernel.Pending}
		if got := rec.states("dep"); !slices.Equal(got, want) {
			t.Errorf("state events = %v, want %v", got, want)
		}
		checkChain(t, rec.of("dep"))
		if got := info(t, k, "dep").Waiting; !slices.Equal(got, []string{"index"}) {
			t.Errorf("waiting = %v, want [index]", got)
		}
	})

	t.Run("when a provider returns the dependent is rebuilt", func(t *testing.T) {
		k, _ := newKernel(t)
		var d dependent
		load(t, k, provider("indexer", "index", "v1", nil))
		dep := load(t, k, d.plugin("dep", "index"))
		if err := k.Unload("indexer"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		load(t, k, provider("other-indexer", "index", "v2", nil))
		if got := dep.State(); got != kernel.Active {
			t.Fatalf("state = %v, want ACTIVE", got)
		}
		if got := d.applies(); !slices.Equal(got, []any{"v1", "v2"}) {
			t.Errorf("applies saw %v, want [v1 v2] (apply runs again)", got)
		}
		all := k.Points().All("deps")
		if len(all) != 1 || all[0].Value != "v2" {
			t.Errorf("deps = %+v, want only the rebuilt contribution v2", all)
		}
		if isDone(d.ctx(1)) {
			t.Error("the rebuilt scope's context is cancelled")
		}
	})

	t.Run("a provider disposing just its provide effect rebuilds its dependents", func(t *testing.T) {
		k, _ := newKernel(t)
		var d dependent
		keep := make(chan *kernel.Effect, 1)
		prov := load(t, k, kernel.Plugin{Name: "indexer", Apply: func(_ context.Context, s *kernel.Scope) error {
			if _, err := s.Contribute("other", "", 0, 1); err != nil {
				return err
			}
			e, err := s.Provide("index", "v1")
			keep <- e
			return err
		}})
		provide := <-keep
		dep := load(t, k, d.plugin("dep", "index"))
		if err := provide.Undo(); err != nil {
			t.Fatalf("undo: %v", err)
		}
		if got := dep.State(); got != kernel.Pending {
			t.Errorf("dependent = %v, want PENDING", got)
		}
		if k.Points().Exists("deps") {
			t.Error("the dependent's contribution outlived the service")
		}
		if got := prov.State(); got != kernel.Active {
			t.Errorf("provider = %v, want ACTIVE", got)
		}
		if !k.Points().Exists("other") {
			t.Error("the provider's other effect went with its provide")
		}
		if got := info(t, k, "indexer").Provides; len(got) != 0 {
			t.Errorf("provider still provides %v", got)
		}
		// The provider, still active, provides again: the dependent is
		// rebuilt against the new value.
		must(t)(prov.Provide("index", "v2"))
		if got := dep.State(); got != kernel.Active {
			t.Fatalf("dependent after the service returned = %v, want ACTIVE", got)
		}
		if got := d.applies(); !slices.Equal(got, []any{"v1", "v2"}) {
			t.Errorf("applies saw %v, want [v1 v2]", got)
		}
	})

	t.Run("dependents of a dependent are rebuilt too", func(t *testing.T) {
		k, _ := newKernel(t)
		var mid, top dependent
		load(t, k, provider("indexer", "index", "v1", nil))
		midScope := load(t, k, kernel.Plugin{Name: "mid", Inject: []string{"index"}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			if err := mid.plugin("mid", "index").Apply(ctx, s); err != nil {
				return err
			}
			_, err := s.Provide("search", "s")
			return err
		}})
		topScope := load(t, k, top.plugin("top", "search"))
		if err := k.Unload("indexer"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if midScope.State() != kernel.Pending || topScope.State() != kernel.Pending {
			t.Errorf("mid %v, top %v, want both PENDING", midScope.State(), topScope.State())
		}
		load(t, k, provider("indexer", "index", "v2", nil))
		if midScope.State() != kernel.Active || topScope.State() != kernel.Active {
			t.Errorf("mid %v, top %v, want both ACTIVE", midScope.State(), topScope.State())
		}
		if len(mid.applies()) != 2 || len(top.applies()) != 2 {
			t.Errorf("mid applied %d times, top %d, want 2 each", len(mid.applies()), len(top.applies()))
		}
	})

	for _, tc := range []struct {
		name string
		// again is what the dependent does after its provider left while
		// it was still loading.
		again func(s *kernel.Scope) error
	}{
		{name: "a provider leaving while its dependent loads sends it back to pending", again: func(*kernel.Scope) error { return nil }},
		{name: "a dependent failing because its provider left while it loaded goes back to pending", again: func(s *kernel.Scope) error {
			_, err := s.Service("index") // gone by now
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := newKernel(t)
			ctx := testkit.ContextFor(t, 10*time.Second)
			keep := make(chan *kernel.Effect, 2)
			load(t, k, provider("indexer", "index", "v1", keep))
			provide := <-keep
			var applied counter
			started, release := make(chan struct{}), make(chan struct{})
			loaded := make(chan error, 1)
			go func() {
				_, err := k.Load(kernel.Plugin{Name: "dep", Inject: []string{"index"}, Apply: func(_ context.Context, s *kernel.Scope) error {
					applied.inc()
					if applied.get() > 1 {
						return nil
					}
					if _, err := s.Service("index"); err != nil {
						return err
					}
					if _, err := s.Contribute("deps", "dep", 0, 1); err != nil {
						return err
					}
					close(started)
					<-release
					return tc.again(s)
				}})
				loaded <- err
			}()
			waitFor(t, ctx, started, "the dependent to start loading")
			if err := provide.Undo(); err != nil {
				t.Fatalf("undo: %v", err)
			}
			close(release)
			if err := waitFor(t, ctx, loaded, "load to return"); err != nil {
				t.Errorf("load = %v, want nil: the dependent is waiting, not failed", err)
			}
			dep, _ := k.Scope("dep")
			if got := dep.State(); got != kernel.Pending {
				t.Fatalf("dependent = %v (error %v), want PENDING", got, dep.Err())
			}
			if k.Points().Exists("deps") {
				t.Error("what the dependent registered while loading outlived the service")
			}
			load(t, k, provider("other-indexer", "index", "v2", nil))
			if got := dep.State(); got != kernel.Active || applied.get() != 2 {
				t.Errorf("dependent = %v after %d applies, want ACTIVE after 2", got, applied.get())
			}
		})
	}

	for _, tc := range []struct {
		name    string
		inject  []string
		service string
	}{
		{name: "reading a provided service that is not injected is an error", service: "index"},
		{name: "reading a built-in service that is not injected is an error", service: kernel.ServicePoints},
		{name: "reading an unknown service is an error", service: "nothing", inject: []string{"index"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := newKernel(t)
			load(t, k, provider("indexer", "index", "v1", nil))
			var got error
			load(t, k, kernel.Plugin{Name: "p", Inject: tc.inject, Apply: func(_ context.Context, s *kernel.Scope) error {
				v, err := s.Service(tc.service)
				if v != nil {
					t.Errorf("Service returned %v with error %v", v, err)
				}
				got = err
				return nil
			}})
			if got == nil || !strings.Contains(got.Error(), tc.service) || !strings.Contains(got.Error(), "inject") {
				t.Errorf("Service error = %v, want one naming %q and inject", got, tc.service)
			}
		})
	}

	for _, tc := range []struct {
		name      string
		first     string // plugin already providing index, "" for none
		service   string
		wantNames []string
	}{
		{name: "two providers of one name is an error naming both", first: "first", service: "index", wantNames: []string{"first", "second"}},
		{name: "one plugin providing a name twice is an error", service: "index", wantNames: []string{"second"}},
		{name: "providing a built-in name is an error naming the kernel", service: kernel.ServicePoints, wantNames: []string{"kernel", "second"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			k, _ := newKernel(t)
			if tc.first != "" {
				load(t, k, provider(tc.first, tc.service, "first's", nil))
			}
			_, err := k.Load(kernel.Plugin{Name: "second", Apply: func(_ context.Context, s *kernel.Scope) error {
				if tc.first == "" && tc.service == "index" {
					if _, err := s.Provide(tc.service, "second's"); err != nil {
						return err
					}
				}
				_, err := s.Provide(tc.service, "second's again")
				return err
			}})
			if err == nil {
				t.Fatal("the second provision succeeded")
			}
			for _, name := range tc.wantNames {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("error %q does not name %s", err, name)
				}
			}
			// The failed plugin's provision is gone; the first stays.
			var d dependent
			dep := load(t, k, d.plugin("dep", tc.service))
			if tc.first == "" && tc.service == "index" {
				if got := dep.State(); got != kernel.Pending {
					t.Errorf("dependent = %v, want PENDING", got)
				}
				return
			}
			if got := d.applies(); len(got) != 1 || got[0] == "second's again" {
				t.Errorf("dependent saw %v, want the first provider's value", got)
			}
		})
	}

	t.Run("built-in points and logger services", func(t *testing.T) {
		k, logs := newKernel(t)
		var points, logger any
		p := load(t, k, kernel.Plugin{Name: "p", Inject: []string{kernel.ServicePoints, kernel.ServiceLogger}, Apply: func(_ context.Context, s *kernel.Scope) error {
			var err error
			if points, err = s.Service(kernel.ServicePoints); err != nil {
				return err
			}
			logger, err = s.Service(kernel.ServiceLogger)
			return err
		}})
		if got := p.State(); got != kernel.Active {
			t.Fatalf("a plugin injecting only built-ins = %v, want ACTIVE", got)
		}
		if points != k.Points() {
			t.Errorf("points service = %v, want the kernel's points", points)
		}
		l, ok := logger.(hclog.Logger)
		if !ok {
			t.Fatalf("logger service is %T, want hclog.Logger", logger)
		}
		if got := l.Name(); got != "host.p" {
			t.Errorf("logger name = %q, want host.p", got)
		}
		if got := p.Logger().Name(); got != "host.p" {
			t.Errorf("Scope.Logger name = %q, want host.p", got)
		}
		l.Info("hello from the plugin")
		if !strings.Contains(logs.String(), "host.p: hello from the plugin") {
			t.Errorf("log does not show the plugin's line under its name:\n%s", logs)
		}
	})

	t.Run("a binder service is bound to the consumer scope", func(t *testing.T) {
		k, _ := newKernel(t)
		load(t, k, provider("registry", "registry", registryService(), nil))
		for _, name := range []string{"user1", "user2"} {
			load(t, k, kernel.Plugin{Name: name, Inject: []string{"registry"}, Apply: func(_ context.Context, s *kernel.Scope) error {
				v, err := s.Service("registry")
				if err != nil {
					return err
				}
				r, ok := v.(registrar)
				if !ok {
					return errors.New("the registry service was not bound")
				}
				_, err = r.register("tool-of-"+name, name)
				return err
			}})
		}
		for _, name := range []string{"user1", "user2"} {
			if c, ok := k.Points().Get("registered", "tool-of-"+name); !ok || c.Owner != name {
				t.Errorf("%s's registration = %+v, %v; want owned by %s", name, c, ok, name)
			}
			if got, want := info(t, k, name).Effects, []string{"contribute registered tool-of-" + name}; !slices.Equal(got, want) {
				t.Errorf("%s's effects = %v, want %v", name, got, want)
			}
		}
		if got, want := info(t, k, "registry").Effects, []string{"provide registry"}; !slices.Equal(got, want) {
			t.Errorf("the provider's effects = %v, want %v", got, want)
		}
		if err := k.Unload("user1"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		all := k.Points().All("registered")
		if len(all) != 1 || all[0].Owner != "user2" {
			t.Errorf("registered after user1 left = %+v, want only user2's", all)
		}
		if got := info(t, k, "registry").State; got != kernel.Active {
			t.Errorf("the provider = %v, want ACTIVE", got)
		}
		if err := k.Unload("registry"); err != nil {
			t.Fatalf("unload: %v", err)
		}
		if k.Points().Exists("registered") {
			t.Error("user2's registration outlived the registry")
		}
		if got := info(t, k, "user2").State; got != kernel.Pending {
			t.Errorf("user2 = %v, want PENDING", got)
		}
	})
}
