package remote

import (
	"context"
	"runtime"
	"testing"
)

// gateState reads the gate's counts.
func gateState(g *soloGate) (inflight, waiting int, solo bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.inflight, g.waiting, g.solo
}

// TestSoloGate: a retry alone waits for the calls in flight and keeps new
// ones out while it waits and while it runs; a retry that gives up lets
// them in again.
func TestSoloGate(t *testing.T) {
	var g soloGate
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel() // a context already ended: a call that would wait fails at once

	if err := g.enter(ctx); err != nil {
		t.Fatalf("enter on an idle gate: %v", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- g.lock(ctx) }()
	for {
		if _, waiting, _ := gateState(&g); waiting == 1 {
			break
		}
		select {
		case err := <-locked:
			t.Fatalf("lock returned %v with a call in flight", err)
		default:
			runtime.Gosched() // lets the locking goroutine run; no time is asserted
		}
	}
	if err := g.enter(done); err == nil {
		t.Fatal("a new call entered while a retry alone waits for its turn")
	}
	g.leave()
	if err := <-locked; err != nil {
		t.Fatalf("lock after the call left: %v", err)
	}
	if inflight, waiting, solo := gateState(&g); inflight != 0 || waiting != 0 || !solo {
		t.Fatalf("gate after lock: inflight %d waiting %d solo %v", inflight, waiting, solo)
	}
	if err := g.enter(done); err == nil {
		t.Fatal("a new call entered during a retry alone")
	}
	if err := g.lock(done); err == nil {
		t.Fatal("a second retry alone ran with the first")
	}
	if _, waiting, _ := gateState(&g); waiting != 0 {
		t.Fatalf("a retry that gave up is still counted waiting (%d)", waiting)
	}
	g.unlock()
	if err := g.enter(ctx); err != nil {
		t.Fatalf("enter after the retry alone: %v", err)
	}
	g.leave()
}
