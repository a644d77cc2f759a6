package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// ErrScopeEnded is returned by a registration made on a scope that is no
// longer loading or active; the registration has been undone already.
var ErrScopeEnded = errors.New("plugin scope has ended")

// A Scope is one plugin's place in the kernel. It wraps a context that is
// cancelled when the scope ends and records every effect the plugin makes so
// that ending the scope undoes them, newest first.
type Scope struct {
	k      *Kernel
	plugin Plugin
	log    hclog.Logger

	mu        sync.Mutex
	state     State
	effects   []*Effect
	provides  []string
	lastErr   error
	ctx       context.Context
	cancel    context.CancelFunc
	stale     bool // a service it injects left while it was loading
	unloadReq bool // Unload was asked while it was loading

	// A reload builds the next version in a staged scope while this one
	// serves: next is that scope (guarded by the kernel's life lock).
	next *Scope
	// held keeps reconcile from starting it again while a reload waits
	// for its start in progress to stop (guarded by life).
	held bool
	// In a staged scope: replaces is the scope it will replace, staged
	// what it registered so far, and abort why it must not commit.
	replaces *Scope
	staged   *stage
	abort    error
}

// Name is the plugin's name.
func (s *Scope) Name() string { return s.plugin.Name }

// Logger is the plugin's logger, named after it.
func (s *Scope) Logger() hclog.Logger { return s.log }

// Context is cancelled when the scope ends (unload, failure, rebuild).
func (s *Scope) Context() context.Context {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx
}

// State is the scope's current state.
func (s *Scope) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// Err is the error of the scope's last failed apply, if any.
func (s *Scope) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastErr
}

// Track records an effect whose registration the caller has already made.
// On a scope that is not loading or active the undo runs at once and
// ErrScopeEnded is returned, so nothing can outlive its scope.
func (s *Scope) Track(desc string, undo func() error) (*Effect, error) {
	e := &Effect{desc: desc, scope: s, undo: undo}
	s.mu.Lock()
	live := s.state == Loading || s.state == Active
	if live {
		s.effects = append(s.effects, e)
	}
	s.mu.Unlock()
	if !live {
		e.run()
		if e.err != nil {
			s.log.Error("undo failed", "effect", e.desc, "error", e.err)
		}
		return nil, s.endedErr(desc)
	}
	return e, nil
}

// ended returns an ErrScopeEnded error when the scope is not loading or
// active. Provide, On and Contribute check it before registering, so that a
// late registration is never visible to anyone (not even to a point's
// watchers, nor as a conflict with a live plugin's key) and fails with
// ErrScopeEnded; Track stays the guarantee when the scope ends between this
// check and the registration.
func (s *Scope) ended(desc string) error {
	s.mu.Lock()
	live := s.state == Loading || s.state == Active
	s.mu.Unlock()
	if live {
		return nil
	}
	return s.endedErr(desc)
}

func (s *Scope) endedErr(desc string) error {
	return fmt.Errorf("%s: %s: %w", s.plugin.Name, desc, ErrScopeEnded)
}

// forget drops a disposed effect from the scope's list.
func (s *Scope) forget(e *Effect) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if i := slices.Index(s.effects, e); i >= 0 {
		s.effects = slices.Delete(s.effects, i, i+1)
	}
}

// Provide makes a service available under name for as long as this scope
// lives. A value that implements Binder is bound to each consumer, so that
// what a consumer registers through it is that consumer's effect.
func (s *Scope) Provide(name string, value any) (*Effect, error) {
	if name == "" {
		return nil, fmt.Errorf("%s: provide: empty service name", s.plugin.Name)
	}
	if err := s.ended("provide " + name); err != nil {
		return nil, err
	}
	if st := s.stage(); st != nil {
		return st.provide(s, name, value)
	}
	if err := s.k.provide(name, value, s); err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.provides = append(s.provides, name)
	s.mu.Unlock()
	e, err := s.Track("provide "+name, func() error {
		s.mu.Lock()
		if i := slices.Index(s.provides, name); i >= 0 {
			s.provides = slices.Delete(s.provides, i, i+1)
		}
		s.mu.Unlock()
		s.k.withdraw(name, s)
		return nil
	})
	if err != nil {
		return nil, err
	}
	if s.State() == Active {
		// A service provided after apply can unblock pending plugins.
		s.k.settle()
	}
	return e, nil
}

// Service returns the named service. Only services the plugin injects may be
// read; a Binder is bound to this scope.
func (s *Scope) Service(name string) (any, error) {
	if !slices.Contains(s.plugin.Inject, name) {
		return nil, fmt.Errorf("%s: service %q is not injected (add it to inject)", s.plugin.Name, name)
	}
	v, ok := s.k.service(name)
	if !ok {
		return nil, fmt.Errorf("%s: service %q is not provided", s.plugin.Name, name)
	}
	if b, ok := v.(Binder); ok {
		return b.Bind(s), nil
	}
	return v, nil
}

// On adds a listener for the named event; the listener is an effect.
func (s *Scope) On(event string, h Handler) (*Effect, error) {
	if h == nil {
		return nil, fmt.Errorf("%s: on %q: nil handler", s.plugin.Name, event)
	}
	if err := s.ended("on " + event); err != nil {
		return nil, err
	}
	if st := s.stage(); st != nil {
		return st.listen(s, event, h)
	}
	remove := s.k.events.add(event, s.plugin.Name, h)
	e, err := s.Track("on "+event, func() error { remove(); return nil })
	if e != nil {
		e.listener = true
	}
	return e, err
}

// Contribute adds value to an extension point under key and order; the
// contribution is an effect. A point declared unique refuses a second
// contribution with the same key, naming the owner of the first.
func (s *Scope) Contribute(point, key string, order int, value any) (*Effect, error) {
	if err := s.ended("contribute " + point); err != nil {
		return nil, err
	}
	desc := "contribute " + point
	if key != "" {
		desc += " " + key
	}
	c := pendingContribution{point: point, key: key, order: order, value: value, owner: s.plugin.Name}
	if st := s.stage(); st != nil {
		if err := s.k.points.check(c); err != nil {
			return nil, fmt.Errorf("%s: %w", s.plugin.Name, err)
		}
		return st.contribute(s, desc, c)
	}
	refs, _, err := s.k.points.swap(nil, []pendingContribution{c}, false)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", s.plugin.Name, err)
	}
	ref := refs[0]
	e, err := s.Track(desc, func() error { s.k.points.remove(ref); return nil })
	if e != nil {
		e.contrib = &ref
	}
	return e, err
}

// Addition is one contribution of ContributeAll.
type Addition struct {
	Point, Key string
	Order      int
	Value      any
}

// ContributeAll removes the contributions drop (effects of this scope) and
// makes adds, in one step: a reader of the points sees the change whole or
// not at all, and each point's watchers are told once, so that a batch of n
// contributions costs one rebuild of what follows the point, not n. An add
// that a unique point refuses is left out with its error in errs (at its
// index; errs is nil when none was refused) and the others are made. err is
// set, and nothing changed, when the scope has ended. On a scope a reload
// is staging, the contributions are staged one by one (nobody sees them
// before the reload commits anyway).
func (s *Scope) ContributeAll(drop []*Effect, adds []Addition) (effects []*Effect, errs []error, err error) {
	if err := s.ended("contribute"); err != nil {
		return nil, nil, err
	}
	for _, e := range drop {
		if e == nil || e.scope != s {
			return nil, nil, fmt.Errorf("%s: contribute: an effect to drop is not this plugin's", s.plugin.Name)
		}
	}
	effects = make([]*Effect, len(adds))
	setErr := func(i int, err error) {
		if errs == nil {
			errs = make([]error, len(adds))
		}
		errs[i] = err
	}
	if s.stage() != nil {
		for _, e := range drop {
			_ = e.Undo()
		}
		for i, a := range adds {
			if effects[i], err = s.Contribute(a.Point, a.Key, a.Order, a.Value); err != nil {
				setErr(i, err)
			}
		}
		return effects, errs, nil
	}
	var dropRefs []contribRef
	var others []*Effect
	for _, e := range drop {
		if e.contrib != nil {
			dropRefs = append(dropRefs, *e.contrib)
		} else {
			others = append(others, e)
		}
	}
	pending := make([]pendingContribution, len(adds))
	for i, a := range adds {
		pending[i] = pendingContribution{point: a.Point, key: a.Key, order: a.Order, value: a.Value, owner: s.plugin.Name}
	}
	refs, refused, _ := s.k.points.swap(dropRefs, pending, true)
	// The dropped contributions are gone already: their effects are spent
	// without running their undo again, and forgotten in one pass.
	if len(drop) > len(others) {
		gone := make(map[*Effect]bool, len(drop))
		for _, e := range drop {
			if e.contrib != nil {
				e.once.Do(func() {})
				gone[e] = true
			}
		}
		s.mu.Lock()
		s.effects = slices.DeleteFunc(s.effects, func(e *Effect) bool { return gone[e] })
		s.mu.Unlock()
	}
	for _, e := range others {
		_ = e.Undo()
	}
	for i, a := range adds {
		if refused != nil && refused[i] != nil {
			setErr(i, fmt.Errorf("%s: %w", s.plugin.Name, refused[i]))
			continue
		}
		desc := "contribute " + a.Point
		if a.Key != "" {
			desc += " " + a.Key
		}
		ref := refs[i]
		e, err := s.Track(desc, func() error { s.k.points.remove(ref); return nil })
		if err != nil {
			setErr(i, err)
			continue
		}
		e.contrib = &ref
		effects[i] = e
	}
	return effects, errs, nil
}

// A Binder is a service that hands each consumer its own view, so that
// registrations made through it are effects of the consumer.
type Binder interface {
	Bind(consumer *Scope) any
}
