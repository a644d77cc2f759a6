package kernel

import (
	"fmt"
	"sync"
)

// An Effect is one registration a plugin made, paired with its undo. Undo is
// idempotent: the first call runs it, later calls return the first result.
type Effect struct {
	desc  string
	scope *Scope
	undo  func() error
	// contrib is set for a contribution that is in its point; a reload
	// swaps it out with the new scope's contributions in one step.
	contrib *contribRef
	// listener marks an event listener; a reload removes it when it
	// commits, so that no event reaches both versions.
	listener bool

	once sync.Once
	err  error
}

// String names the effect, as the kernel's description of a scope lists it.
func (e *Effect) String() string { return e.desc }

// Undo reverses the registration and forgets it from its scope. Disposing one
// registration of a live plugin is allowed; the rest of the scope is untouched.
func (e *Effect) Undo() error {
	e.run()
	if e.scope != nil {
		e.scope.forget(e)
		// Only a withdrawn service changes what may load, so only then
		// wait for the lifecycle lock: disposing a listener or a
		// contribution must not wait for another plugin's unload (whose
		// undos may themselves be waiting for this call, a remote plugin's
		// drain for instance).
		if e.scope.k.hasWithdrawn() {
			e.scope.k.settle()
		}
	}
	return e.err
}

// run performs the undo once, turning a panic into an error so that one bad
// undo never stops the others.
func (e *Effect) run() {
	e.once.Do(func() {
		defer func() {
			if r := recover(); r != nil {
				e.err = fmt.Errorf("undo %s panicked: %v", e.desc, r)
			}
		}()
		if e.undo != nil {
			e.err = e.undo()
		}
	})
}
