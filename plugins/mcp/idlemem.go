package main

import (
	"runtime/debug"
	"sync/atomic"
	"time"
)

// A bridge's heap is 1–2 MB live but the collector lets it grow to its
// goal, never below 4 MB, and the runtime keeps the pages it freed
// resident near that goal: ≈6.5 MiB of memory of its own, idle or not
// (docs/performance.md). Most bridged servers sit idle most of the time,
// so once a bridge has started no call for idleRelease it gives the
// heap's free pages back to the system, once per idle spell: ≈1 MiB less
// for an idle bridge, ≈2 MiB after a burst of calls. Its first call after
// that grows the heap again as it needs.
const idleRelease = 30 * time.Second

// idleMemory counts the bridge's calls and releases memory when they stop.
type idleMemory struct {
	calls atomic.Uint64
	// tick and release are time.Ticker's channel and debug.FreeOSMemory
	// unless a test sets them before start.
	tick    <-chan time.Time
	release func()
}

func (m *idleMemory) called() { m.calls.Add(1) }

// releaseWhenIdle runs until the bridge closes (base ends).
func (b *bridge) releaseWhenIdle() {
	defer b.wg.Done()
	m := &b.idle
	tick, release := m.tick, m.release
	if tick == nil {
		t := time.NewTicker(idleRelease)
		defer t.Stop()
		tick = t.C
	}
	if release == nil {
		release = debug.FreeOSMemory
	}
	seen, released := m.calls.Load(), false
	for {
		select {
		case <-b.base.Done():
			return
		case <-tick:
		}
		// A call that started and ended within the interval counts too:
		// the counter moved.
		if n := m.calls.Load(); n != seen {
			seen, released = n, false
			continue
		}
		if !released {
			release()
			released = true
		}
	}
}
