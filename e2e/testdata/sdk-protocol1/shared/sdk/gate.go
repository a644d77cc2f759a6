package sdk

import (
	"context"
	"sync"
)

// gate counts the handler calls in flight so that Shutdown can let them
// finish before it runs the stop hook and closes the host connection, and
// refuses new ones meanwhile.
type gate struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{}
}

// enter reports whether a call may start; each true must be paired with exit.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return false
	}
	g.n++
	return true
}

func (g *gate) exit() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.n--
	if g.n == 0 && g.idle != nil {
		close(g.idle)
		g.idle = nil
	}
}

// closeAndWait refuses new calls and waits for the ones in flight, or for ctx.
func (g *gate) closeAndWait(ctx context.Context) error {
	g.mu.Lock()
	g.closed = true
	if g.n == 0 {
		g.mu.Unlock()
		return nil
	}
	if g.idle == nil {
		g.idle = make(chan struct{})
	}
	idle := g.idle
	g.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
