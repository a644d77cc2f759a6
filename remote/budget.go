package remote

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// budget bounds a remote wrapper by its own time: the time its RPC runs,
// not counting the time it spends inside next (the rest of the chain, which
// may hold an approval or the tool itself and has bounds of its own). A
// filter is a wrapper that never calls next. When the budget runs out, the
// RPC's context is cancelled, so that no call waits forever on a plugin
// that neither answers nor continues the chain.
//
// A nil *budget (no listener timeout) bounds nothing.
type budget struct {
	limit  time.Duration
	cancel context.CancelFunc

	mu      sync.Mutex
	left    time.Duration
	since   time.Time   // when the running stretch began
	timer   *time.Timer // nil while inside next or once stopped
	gen     uint64      // which timer is current, so a stale one is ignored
	inNext  int
	expired bool
	stopped bool
}

// startBudget returns the context for a wrapper's RPC and its budget,
// already running.
func (in *instance) startBudget(ctx context.Context) (context.Context, *budget) {
	if in.listenerTimeout <= 0 {
		return ctx, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	b := &budget{limit: in.listenerTimeout, cancel: cancel, left: in.listenerTimeout}
	b.mu.Lock()
	b.run()
	b.mu.Unlock()
	return ctx, b
}

// run starts the timer for what is left; b.mu is held.
func (b *budget) run() {
	b.since = time.Now()
	b.gen++
	gen := b.gen
	b.timer = time.AfterFunc(b.left, func() { b.fire(gen) })
}

func (b *budget) fire(gen uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if gen != b.gen || b.timer == nil || b.stopped {
		return // next was entered, or the RPC ended, as this fired
	}
	b.expired = true
	b.timer = nil
	b.cancel()
}

// pause stops the clock; b.mu is held.
func (b *budget) pause() {
	if b.timer != nil {
		b.timer.Stop()
		b.timer = nil
		b.left -= time.Since(b.since)
	}
}

// enter stops the clock while next runs. It reports false when the budget
// had already run out: the wrapper's call is over and next must not start.
func (b *budget) enter() bool {
	if b == nil {
		return true
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.expired || b.stopped {
		return false
	}
	b.inNext++
	b.pause()
	return true
}

// leave starts the clock again when the last next in progress returns.
func (b *budget) leave() {
	if b == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.inNext--
	if b.inNext > 0 || b.stopped {
		return
	}
	if b.left <= 0 {
		b.expired = true
		b.cancel()
		return
	}
	b.run()
}

// stop ends the budget once the RPC has returned, and reports whether it
// ran out (the RPC failed because of it).
func (b *budget) stop() (expired bool) {
	if b == nil {
		return false
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pause()
	b.stopped = true
	b.cancel()
	return b.expired
}

// ranOut is err when expired (what stop returned), else nil.
func (b *budget) ranOut(expired bool, in *instance, op string) error {
	if !expired {
		return nil
	}
	return b.err(in, op)
}

// err says that the listener did not answer within its budget.
func (b *budget) err(in *instance, op string) error {
	return fmt.Errorf("plugin %s: %s: no answer within %s (listener_timeout, not counting the rest of the chain)", in.name, op, b.limit)
}
