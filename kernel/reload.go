package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
)

// Reload replaces an active plugin with a new run of its apply step, with no
// moment at which neither version serves: the new version is built in a
// staged scope whose registrations stay invisible while the old one serves,
// then one step swaps every contribution of the old scope for the new
// scope's (a reader of the points sees one version or the other, never a
// mix, never neither), and only then are the old scope's remaining effects
// (its process, say) undone. If the apply step fails, the staged scope is
// discarded and the old version keeps serving; the error says why.
//
// Plugins that inject a service both versions provide are reloaded the same
// way afterwards, against the new provider, before the old version is
// retired. A plugin that is not active (pending, failed) is simply started
// again; one that is loading has that start stopped first.
func (k *Kernel) Reload(name string) error { return k.replace(name, nil) }

// Replace is Reload with a new definition of the plugin: its inject list and
// apply step. If the new version fails, the old definition stays.
func (k *Kernel) Replace(p Plugin) error {
	if p.Apply == nil {
		return fmt.Errorf("reload %s: plugin has no apply step", p.Name)
	}
	p.Inject = slices.Clone(p.Inject)
	return k.replace(p.Name, &p)
}

func (k *Kernel) replace(name string, def *Plugin) error {
	k.life.Lock()
	old, ok := k.scopes[name]
	if !ok {
		k.life.Unlock()
		return fmt.Errorf("reload %s: no such plugin", name)
	}
	if old.next != nil {
		k.life.Unlock()
		return fmt.Errorf("reload %s: a reload is already in progress", name)
	}
	if old.State() == Loading {
		// A start in progress (a crash loop waiting out its backoff, say):
		// it is stopped, then started again below with the new definition.
		old.mu.Lock()
		old.stale = true
		old.cancel()
		old.mu.Unlock()
		old.held = true
		for old.State() == Loading {
			k.cond.Wait()
		}
		old.held = false
		if k.scopes[name] != old {
			k.life.Unlock()
			return fmt.Errorf("reload %s: it was unloaded meanwhile", name)
		}
	}
	switch old.State() {
	case Active:
	default:
		// Nothing of it serves: start it again, with the new definition.
		if def != nil {
			old.plugin = *def
		}
		k.restartLocked(old, nil)
		err := old.Err()
		failed := old.State() == Failed
		k.life.Unlock()
		if failed {
			return fmt.Errorf("reload %s: %w", name, err)
		}
		return nil
	}

	p := old.plugin
	if def != nil {
		p = *def
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &Scope{k: k, plugin: p, log: old.log, state: Loading, ctx: ctx, cancel: cancel, replaces: old, staged: &stage{}}
	old.next = s
	k.life.Unlock()
	err := s.apply(ctx)
	k.life.Lock()
	old.next = nil
	k.cond.Broadcast()
	s.mu.Lock()
	if s.abort != nil {
		// Why it was stopped says more than the cancelled context it saw.
		err = s.abort
	}
	s.mu.Unlock()
	if err == nil && k.scopes[name] != old {
		err = errors.New("it was unloaded while the new version started")
	}
	var shared []string
	if err == nil {
		shared, err = k.commitLocked(old, s)
	}
	if err != nil {
		// The old version may have died meanwhile; it restarts as usual.
		k.reconcileLocked()
		k.life.Unlock()
		retire(s)
		return fmt.Errorf("reload %s: %w", name, err)
	}
	k.reconcileLocked()
	var dependents []string
	for _, d := range k.order {
		if d.State() == Active && slices.ContainsFunc(d.plugin.Inject, func(n string) bool { return slices.Contains(shared, n) }) {
			dependents = append(dependents, d.plugin.Name)
		}
	}
	k.life.Unlock()
	for _, d := range dependents {
		if err := k.replace(d, nil); err != nil {
			s.log.Error("dependent could not be reloaded against the new provider; restarting it", "plugin", d, "error", err)
			_ = k.Restart(d, err)
		}
	}
	retire(old)
	return nil
}

// stage holds what a staged scope registered: nothing of it is visible until
// the reload commits.
type stage struct {
	mu        sync.Mutex
	committed bool
	contribs  []*stagedContribution
	listeners []*stagedListener
	provides  []*stagedProvision
}

type stagedContribution struct {
	c      pendingContribution
	effect *Effect
	ref    *contribRef // set when committed
}

type stagedListener struct {
	event  string
	h      Handler
	effect *Effect
	remove func() // set when committed
}

type stagedProvision struct {
	name  string
	value any
}

// stage returns the scope's stage while it has one.
func (s *Scope) stage() *stage {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.staged
}

// contribute stages a contribution; once the stage has committed it is made
// at once, as on any scope.
func (st *stage) contribute(s *Scope, desc string, c pendingContribution) (*Effect, error) {
	st.mu.Lock()
	if st.committed {
		st.mu.Unlock()
		return s.Contribute(c.point, c.key, c.order, c.value)
	}
	sc := &stagedContribution{c: c}
	st.contribs = append(st.contribs, sc)
	st.mu.Unlock()
	e, err := s.Track(desc, func() error {
		st.mu.Lock()
		ref := sc.ref
		if ref == nil {
			st.contribs = slices.DeleteFunc(st.contribs, func(x *stagedContribution) bool { return x == sc })
		}
		st.mu.Unlock()
		if ref != nil {
			s.k.points.remove(*ref)
		}
		return nil
	})
	st.mu.Lock()
	sc.effect = e
	if e != nil && sc.ref != nil {
		e.contrib = sc.ref
	}
	st.mu.Unlock()
	return e, err
}

func (st *stage) listen(s *Scope, event string, h Handler) (*Effect, error) {
	st.mu.Lock()
	if st.committed {
		st.mu.Unlock()
		return s.On(event, h)
	}
	sl := &stagedListener{event: event, h: h}
	st.listeners = append(st.listeners, sl)
	st.mu.Unlock()
	e, err := s.Track("on "+event, func() error {
		st.mu.Lock()
		remove := sl.remove
		if remove == nil {
			st.listeners = slices.DeleteFunc(st.listeners, func(x *stagedListener) bool { return x == sl })
		}
		st.mu.Unlock()
		if remove != nil {
			remove()
		}
		return nil
	})
	st.mu.Lock()
	sl.effect = e
	if e != nil && sl.remove != nil {
		e.listener = true
	}
	st.mu.Unlock()
	return e, err
}

func (st *stage) provide(s *Scope, name string, value any) (*Effect, error) {
	st.mu.Lock()
	if st.committed {
		st.mu.Unlock()
		return s.Provide(name, value)
	}
	if err := s.k.provideCheck(name, s); err != nil {
		st.mu.Unlock()
		return nil, err
	}
	for _, p := range st.provides {
		if p.name == name {
			st.mu.Unlock()
			return nil, fmt.Errorf("service %q is provided twice: by %s and by %s", name, s.plugin.Name, s.plugin.Name)
		}
	}
	sp := &stagedProvision{name: name, value: value}
	st.provides = append(st.provides, sp)
	st.mu.Unlock()
	return s.Track("provide "+name, func() error {
		st.mu.Lock()
		committed := st.committed
		if !committed {
			st.provides = slices.DeleteFunc(st.provides, func(x *stagedProvision) bool { return x == sp })
		}
		st.mu.Unlock()
		if committed {
			s.mu.Lock()
			if i := slices.Index(s.provides, name); i >= 0 {
				s.provides = slices.Delete(s.provides, i, i+1)
			}
			s.mu.Unlock()
			s.k.withdraw(name, s)
		}
		return nil
	})
}

// provideCheck refuses a staged provision that another plugin (not the one
// being reloaded) or the kernel already provides.
func (k *Kernel) provideCheck(name string, s *Scope) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p, ok := k.services[name]; ok && (p.owner == nil || p.owner.plugin.Name != s.plugin.Name) {
		owner := "the kernel"
		if p.owner != nil {
			owner = p.owner.plugin.Name
		}
		return fmt.Errorf("service %q is provided twice: by %s and by %s", name, owner, s.plugin.Name)
	}
	return nil
}

// commitLocked swaps the staged scope s in for old: every contribution in one
// step of the points, then the listeners and the services, then the scope
// itself. It returns the services both versions provide. Nothing changes when
// it fails. It is called with life held.
func (k *Kernel) commitLocked(old, s *Scope) ([]string, error) {
	st := s.staged
	st.mu.Lock()
	defer st.mu.Unlock()
	for _, sp := range st.provides {
		if err := k.provideCheck(sp.name, s); err != nil {
			return nil, err
		}
	}
	old.mu.Lock()
	oldEffects := slices.Clone(old.effects)
	oldProvides := slices.Clone(old.provides)
	oldState := old.state
	// Late registrations of the old version are refused from here on.
	old.state = Unloading
	old.mu.Unlock()
	var drop []contribRef
	for _, e := range oldEffects {
		if e.contrib != nil {
			drop = append(drop, *e.contrib)
		}
	}
	adds := make([]pendingContribution, len(st.contribs))
	for i, sc := range st.contribs {
		adds[i] = sc.c
	}
	refs, _, err := k.points.swap(drop, adds, false)
	if err != nil {
		old.mu.Lock()
		old.state = oldState
		old.mu.Unlock()
		return nil, err
	}
	for i, sc := range st.contribs {
		sc.ref = &refs[i]
		if sc.effect != nil {
			sc.effect.contrib = sc.ref
		}
	}
	for _, e := range oldEffects {
		if e.listener {
			e.run()
		}
	}
	for _, sl := range st.listeners {
		sl.remove = k.events.add(sl.event, s.plugin.Name, sl.h)
		if sl.effect != nil {
			sl.effect.listener = true
		}
	}

	var names, shared []string
	k.mu.Lock()
	for _, name := range oldProvides {
		if p, ok := k.services[name]; ok && p.owner == old {
			delete(k.services, name)
		}
	}
	for _, sp := range st.provides {
		k.services[sp.name] = provision{value: sp.value, owner: s}
		names = append(names, sp.name)
	}
	for _, name := range oldProvides {
		if slices.Contains(names, name) {
			shared = append(shared, name)
		} else {
			k.withdrawn = append(k.withdrawn, name)
		}
	}
	k.mu.Unlock()
	st.committed = true

	k.reg.Lock()
	k.scopes[s.plugin.Name] = s
	if i := slices.Index(k.order, old); i >= 0 {
		k.order[i] = s
	}
	k.reg.Unlock()
	s.mu.Lock()
	s.provides = names
	s.staged, s.replaces = nil, nil
	s.state = Active
	s.mu.Unlock()
	// To whoever follows states, a reload of an active plugin is one
	// ACTIVE → ACTIVE change; one whose old version died meanwhile (it was
	// PENDING, waiting for the reload) loads as usual.
	if oldState == Active {
		k.emit(s, Active, Active, nil)
	} else {
		k.emit(s, oldState, Loading, nil)
		k.emit(s, Loading, Active, nil)
	}
	return shared, nil
}

// retire ends a scope that is no longer the kernel's (the old version after
// a reload, or a staged version that did not commit): its remaining effects
// are undone newest first. It emits no state change: the plugin's state is
// its current scope's.
func retire(s *Scope) {
	s.mu.Lock()
	s.state = Unloading
	effects := s.effects
	s.effects = nil
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	s.undo(effects)
	s.mu.Lock()
	s.state = Disposed
	s.mu.Unlock()
}

// Restart restarts the plugin if this scope is still its current one (see
// Kernel.Restart). On a staged scope (a reload in progress) it makes the
// reload fail with cause; on a scope a reload retired it does nothing. A
// supervisor whose process died calls it, so that the death of an old or a
// new version during a reload touches only that version.
func (s *Scope) Restart(cause error) error {
	k := s.k
	k.life.Lock()
	defer k.life.Unlock()
	if k.scopes[s.plugin.Name] == s {
		k.restartLocked(s, cause)
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replaces != nil {
		if cause == nil {
			cause = errors.New("restarted while it was being reloaded")
		}
		s.abort = cause
		s.cancel()
	}
	return nil
}
