package remote

import (
	"context"
	"sync"
)

// soloGate lets ordinary calls into one plugin process run together, and a
// retry alone (solo.go) run with no other call's question in flight. Each
// process has its own: what was in flight in a process that died cannot
// run again, so it does not hold up a retry in the next one.
//
// Entries are counted by call. A call's own entries never hold it up: a
// call's guards are all started before any is waited for, and a wrapping
// listener's next may ask another listener of the same plugin, so a retry
// alone may run beside questions of its own call (same arguments, so a
// crash is still its doing), and a call that has an entry enters again at
// once. A retry waiting for its turn keeps other calls out, so that traffic
// cannot starve it. An entry is left when its answer is read: for a
// started guard, when its call waits for it, which may be after another
// plugin's guard, so a retry's wait is bounded by its call's context.
type soloGate struct {
	mu      sync.Mutex
	calls   map[string]int // entries in flight, by call
	solo    string         // the call retried alone, "" when none
	waiting int            // retries alone waiting for their turn
	changed chan struct{}  // closed and replaced on every change
}

// waitLocked waits, with mu released, for the next change or ctx's end.
func (g *soloGate) waitLocked(ctx context.Context) error {
	if g.changed == nil {
		g.changed = make(chan struct{})
	}
	ch := g.changed
	g.mu.Unlock()
	defer g.mu.Lock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (g *soloGate) broadcastLocked() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// enter admits an ordinary question of call id; leave ends it.
func (g *soloGate) enter(ctx context.Context, id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	for g.calls[id] == 0 && g.solo != id && (g.solo != "" || g.waiting > 0) {
		if err := g.waitLocked(ctx); err != nil {
			return err
		}
	}
	if g.calls == nil {
		g.calls = map[string]int{}
	}
	g.calls[id]++
	return nil
}

func (g *soloGate) leave(id string) {
	g.mu.Lock()
	if g.calls[id]--; g.calls[id] <= 0 {
		delete(g.calls, id)
	}
	g.broadcastLocked()
	g.mu.Unlock()
}

// othersLocked says whether a call other than id has an entry in flight.
func (g *soloGate) othersLocked(id string) bool {
	n := len(g.calls)
	if _, own := g.calls[id]; own {
		n--
	}
	return n > 0
}

// lock admits the retry alone of call id once no other call's question is
// in flight; unlock ends it.
func (g *soloGate) lock(ctx context.Context, id string) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.waiting++
	for g.solo != "" || g.othersLocked(id) {
		if err := g.waitLocked(ctx); err != nil {
			g.waiting--
			g.broadcastLocked()
			return err
		}
	}
	g.waiting--
	g.solo = id
	return nil
}

func (g *soloGate) unlock() {
	g.mu.Lock()
	g.solo = ""
	g.broadcastLocked()
	g.mu.Unlock()
}
