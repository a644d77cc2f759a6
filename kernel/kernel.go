package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/hashicorp/go-hclog"
)

// Plugin is what the kernel loads: a name, the services it needs, and the
// apply step that registers its effects through the scope.
type Plugin struct {
	Name   string
	Inject []string
	// Apply runs once per load with the scope's context, which is cancelled
	// when the scope ends. It must not call Load or Unload.
	Apply func(ctx context.Context, s *Scope) error
}

// Names of the built-in services the kernel provides itself.
const (
	ServicePoints = "points"
	ServiceLogger = "logger"
)

// Kernel holds the plugin scopes, the services, the events and the points.
// Its methods are safe for concurrent use.
type Kernel struct {
	log    hclog.Logger
	events *Events
	points *Points

	// life serialises lifecycle transitions; it is released while an apply
	// step runs so that a slow or remote apply blocks nobody else.
	life sync.Mutex
	cond *sync.Cond // broadcast when a load finishes
	// scopes and order are written with both life and reg held, and read
	// with either: Scope and Describe take only reg, so that a listener of
	// EventStateChanged (which runs with life held) may call them.
	reg    sync.Mutex
	scopes map[string]*Scope
	order  []*Scope

	mu        sync.Mutex // guards services and withdrawn
	services  map[string]provision
	withdrawn []string
}

type provision struct {
	value any
	owner *Scope // nil for the kernel's own services
}

// New returns a kernel that logs through log (hclog.NewNullLogger() for none).
func New(log hclog.Logger) *Kernel {
	if log == nil {
		log = hclog.NewNullLogger()
	}
	k := &Kernel{
		log:      log,
		scopes:   map[string]*Scope{},
		services: map[string]provision{},
	}
	k.cond = sync.NewCond(&k.life)
	k.events = newEvents(log)
	k.points = newPoints()
	k.services[ServicePoints] = provision{value: k.points}
	k.services[ServiceLogger] = provision{value: loggerService{}}
	return k
}

// Events is the kernel's event bus.
func (k *Kernel) Events() *Events { return k.events }

// Points is the kernel's set of extension points.
func (k *Kernel) Points() *Points { return k.points }

// Logger is the kernel's logger.
func (k *Kernel) Logger() hclog.Logger { return k.log }

// loggerService hands each consumer a logger named after it.
type loggerService struct{}

func (loggerService) Bind(s *Scope) any { return s.log }

// Load adds a plugin. It stays PENDING until every service it injects is
// provided, then its apply step runs. Load returns the apply error when this
// plugin failed; a plugin still waiting for a service is not an error, and a
// plugin it unblocked that fails reports it through its own scope (Err,
// Describe, EventStateChanged), not through this Load.
func (k *Kernel) Load(p Plugin) (*Scope, error) {
	if p.Name == "" {
		return nil, errors.New("load: plugin has no name")
	}
	if p.Apply == nil {
		return nil, fmt.Errorf("load %s: plugin has no apply step", p.Name)
	}
	k.life.Lock()
	if _, dup := k.scopes[p.Name]; dup {
		k.life.Unlock()
		return nil, fmt.Errorf("load %s: a plugin with this name is already loaded", p.Name)
	}
	s := &Scope{k: k, plugin: p, log: k.log.Named(p.Name), state: Pending}
	s.plugin.Inject = slices.Clone(p.Inject)
	k.reg.Lock()
	k.scopes[p.Name] = s
	k.order = append(k.order, s)
	k.reg.Unlock()
	k.emit(s, Pending, Pending, nil)
	k.reconcileLocked()
	// Read the outcome before releasing life, so that a concurrent Unload
	// cannot hide a failed apply.
	failed := s.Err()
	if s.State() != Failed {
		failed = nil
	}
	k.life.Unlock()
	if failed != nil {
		return s, fmt.Errorf("load %s: %w", p.Name, failed)
	}
	return s, nil
}

// Unload ends a plugin's scope: its effects are undone newest first, plugins
// that injected a service it provided go back to PENDING, and it is removed.
func (k *Kernel) Unload(name string) error {
	k.life.Lock()
	defer k.life.Unlock()
	s, ok := k.scopes[name]
	if !ok {
		return fmt.Errorf("unload %s: no such plugin", name)
	}
	for {
		if n := s.next; n != nil {
			// A reload is staging the next version: it must not commit.
			n.mu.Lock()
			n.abort = errors.New("the plugin was unloaded")
			n.cancel()
			n.mu.Unlock()
		} else if s.State() == Loading {
			s.mu.Lock()
			s.unloadReq = true
			s.cancel()
			s.mu.Unlock()
		} else {
			break
		}
		k.cond.Wait()
	}
	// While it waited, the scope may have been disposed and the name loaded
	// again: that newer scope is not the one this call was asked to end.
	if k.scopes[name] == s {
		k.endLocked(s, Disposed, nil)
		k.removeLocked(s)
	}
	k.reconcileLocked()
	return nil
}

// Close unloads every plugin, newest first.
func (k *Kernel) Close() {
	k.life.Lock()
	names := make([]string, 0, len(k.order))
	for _, s := range k.order {
		names = append(names, s.plugin.Name)
	}
	k.life.Unlock()
	for i := len(names) - 1; i >= 0; i-- {
		_ = k.Unload(names[i])
	}
}

// Scope returns the named plugin's scope.
func (k *Kernel) Scope(name string) (*Scope, bool) {
	k.reg.Lock()
	defer k.reg.Unlock()
	s, ok := k.scopes[name]
	return s, ok
}

func (k *Kernel) removeLocked(s *Scope) {
	k.reg.Lock()
	defer k.reg.Unlock()
	delete(k.scopes, s.plugin.Name)
	if i := slices.Index(k.order, s); i >= 0 {
		k.order = slices.Delete(k.order, i, i+1)
	}
}

// settle applies what a disposed provision or a new service changed: it
// rebuilds dependents and loads what became loadable.
func (k *Kernel) settle() {
	k.life.Lock()
	k.reconcileLocked()
	k.life.Unlock()
}

// reconcileLocked rebuilds the dependents of withdrawn services, then loads
// pending plugins whose services are all provided, in load order, until
// nothing changes. It is called with life held.
func (k *Kernel) reconcileLocked() {
	for {
		k.rebuildLocked()
		var next *Scope
		for _, s := range k.order {
			// A scope whose next version is staging waits for the reload:
			// that version replaces it, or it starts again if that fails.
			if s.State() == Pending && s.next == nil && !s.held && k.satisfied(s) {
				next = s
				break
			}
		}
		if next == nil {
			return
		}
		k.loadLocked(next)
	}
}

// rebuildLocked sends every plugin that injected a withdrawn service back to
// PENDING, undoing its effects; a plugin still loading is marked stale and
// sent back when its apply returns.
func (k *Kernel) rebuildLocked() {
	for {
		k.mu.Lock()
		names := k.withdrawn
		k.withdrawn = nil
		k.mu.Unlock()
		if len(names) == 0 {
			return
		}
		for _, s := range slices.Clone(k.order) {
			if !slices.ContainsFunc(s.plugin.Inject, func(n string) bool { return slices.Contains(names, n) }) {
				continue
			}
			s.mu.Lock()
			st := s.state
			if st == Loading {
				s.stale = true
			}
			s.mu.Unlock()
			if st == Active {
				k.endLocked(s, Pending, nil)
			}
		}
	}
}

// hasWithdrawn says whether a withdrawn service awaits rebuildLocked. When it
// is false, every service withdrawn so far has been taken by a rebuild.
func (k *Kernel) hasWithdrawn() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.withdrawn) > 0
}

func (k *Kernel) satisfied(s *Scope) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, name := range s.plugin.Inject {
		if _, ok := k.services[name]; !ok {
			return false
		}
	}
	return true
}

// loadLocked runs one plugin's apply step. life is released while it runs.
func (k *Kernel) loadLocked(s *Scope) {
	ctx, cancel := context.WithCancel(context.Background())
	s.mu.Lock()
	s.state, s.ctx, s.cancel = Loading, ctx, cancel
	s.stale, s.unloadReq, s.lastErr = false, false, nil
	s.mu.Unlock()
	k.emit(s, Pending, Loading, nil)

	k.life.Unlock()
	err := s.apply(ctx)
	k.life.Lock()

	s.mu.Lock()
	unloadReq, stale := s.unloadReq, s.stale
	s.mu.Unlock()
	switch {
	case unloadReq:
		k.endLocked(s, Disposed, nil)
		k.removeLocked(s)
	case stale:
		// A service it injects left while it loaded: whatever apply
		// returned was built against a world that is gone (often it failed
		// precisely because the service vanished), so it waits to be
		// rebuilt rather than failing for good.
		if err != nil {
			s.log.Debug("apply failed after a service it injects went away; waiting to be rebuilt", "error", err)
		}
		k.endLocked(s, Pending, nil)
	case err != nil:
		k.endLocked(s, Failed, err)
	default:
		s.mu.Lock()
		s.state = Active
		s.mu.Unlock()
		k.emit(s, Loading, Active, nil)
	}
	k.cond.Broadcast()
}

// apply runs the plugin's apply step, turning a panic into an error.
func (s *Scope) apply(ctx context.Context) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("apply panicked: %v", r)
		}
	}()
	return s.plugin.Apply(ctx, s)
}

// endLocked moves a scope through UNLOADING to final, undoing its effects
// newest first. An undo that fails is logged and the rest still run.
func (k *Kernel) endLocked(s *Scope, final State, cause error) {
	s.mu.Lock()
	from := s.state
	s.state = Unloading
	effects := s.effects
	s.effects = nil
	if s.cancel != nil {
		s.cancel()
	}
	s.mu.Unlock()
	if from != Unloading {
		k.emit(s, from, Unloading, nil)
	}
	s.undo(effects)
	s.mu.Lock()
	s.state = final
	if cause != nil {
		s.lastErr = cause
	}
	s.mu.Unlock()
	k.emit(s, Unloading, final, cause)
}

// undo runs effects newest first. An undo that fails is logged and the rest
// still run. The points' watchers hear of the removals once, at the end.
func (s *Scope) undo(effects []*Effect) {
	s.k.points.hold()
	defer s.k.points.release()
	for i := len(effects) - 1; i >= 0; i-- {
		e := effects[i]
		e.run()
		if e.err != nil {
			s.log.Error("undo failed", "effect", e.desc, "error", e.err)
		}
	}
}

// emit reports a state change. Listeners run with life held: they may call
// Scope, Describe and a scope's State or Err, but not Load, Unload, Restart
// or Close, nor anything that waits for life (undoing a provide, providing
// from an active scope).
func (k *Kernel) emit(s *Scope, from, to State, err error) {
	if from != to || to == Pending {
		if to == Failed {
			s.log.Error("plugin failed", "error", err)
		} else {
			s.log.Debug("plugin state", "state", to.String())
		}
	}
	k.events.Emit(context.Background(), EventStateChanged, StateChange{Plugin: s.plugin.Name, From: from, To: to, Err: err})
}

func (k *Kernel) provide(name string, value any, s *Scope) error {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p, ok := k.services[name]; ok {
		owner := "the kernel"
		if p.owner != nil {
			owner = p.owner.plugin.Name
		}
		return fmt.Errorf("service %q is provided twice: by %s and by %s", name, owner, s.plugin.Name)
	}
	k.services[name] = provision{value: value, owner: s}
	return nil
}

func (k *Kernel) withdraw(name string, s *Scope) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if p, ok := k.services[name]; ok && p.owner == s {
		delete(k.services, name)
		k.withdrawn = append(k.withdrawn, name)
	}
}

func (k *Kernel) service(name string) (any, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	p, ok := k.services[name]
	return p.value, ok
}
