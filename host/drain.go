package host

import (
	"context"
	"fmt"
	"sync"

	"github.com/plugkit-go/plugkit/pipeline"
)

// DecidedByDrain owns the refusal of a call that arrives while the host
// drains.
const DecidedByDrain = "host"

// DrainingMessage starts the error of a call refused because the host is
// shutting down: it never started, and another replica can take it.
const DrainingMessage = "the host is shutting down and starts no new call"

// gate admits calls until the host starts draining, and counts the ones
// admitted so that a drain can wait for them. A call is either admitted
// before the drain began, and then waited for, or refused before it
// started: the check and the count are one step under mu, so no call
// slips between them.
type gate struct {
	mu       sync.Mutex
	draining bool
	running  int
	idle     chan struct{} // made when draining starts, closed when running is 0
}

// enter admits one call, or reports false once the host drains.
func (g *gate) enter() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.draining {
		return false
	}
	g.running++
	return true
}

// leave ends an admitted call.
func (g *gate) leave() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.running--
	if g.draining && g.running == 0 {
		close(g.idle) // made by close, which set draining
	}
}

// close stops admitting calls and returns a channel closed once the
// admitted ones have ended.
func (g *gate) close() <-chan struct{} {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.draining = true
	if g.idle == nil {
		g.idle = make(chan struct{})
		if g.running == 0 {
			close(g.idle)
		}
	}
	return g.idle
}

func (g *gate) closed() (draining bool, running int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.draining, g.running
}

// Drain stops the host taking new calls (Call refuses them, saying the
// host is shutting down, and Draining reports true, which makes the health
// endpoint's readiness fail) and waits until the calls already admitted
// have ended or ctx ends. It leaves the plugins running: Stop stops them
// afterwards. The error says how many calls were still running when ctx
// ended; those are cut by the Stop that follows.
func (h *Host) Drain(ctx context.Context) error {
	idle := h.gate.close()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		_, n := h.gate.closed()
		return fmt.Errorf("drain: %d calls still running: %w", n, ctx.Err())
	}
}

// Draining reports whether Drain has begun.
func (h *Host) Draining() bool {
	d, _ := h.gate.closed()
	return d
}

// refusedDraining is the result of a call that arrives while the host
// drains.
func refusedDraining() pipeline.Result {
	r := pipeline.Fail(pipeline.CodeDenied, DrainingMessage+"; try again on another replica")
	r.DecidedBy = DecidedByDrain
	return r
}
