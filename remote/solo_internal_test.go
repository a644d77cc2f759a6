package remote

import (
	"context"
	"runtime"
	"testing"
)

// gateState reads the gate's counts.
func gateState(g *soloGate) (inflight, waiting int, solo string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, n := range g.calls {
		inflight += n
	}
	return inflight, g.waiting, g.solo
}

// TestSoloGate: a retry alone waits for the calls in flight and keeps new
// ones out while it waits and while it runs; a retry that gives up lets
// them in again.
func TestSoloGate(t *testing.T) {
	var g soloGate
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel() // a context already ended: a call that would wait fails at once

	if err := g.enter(ctx, "a"); err != nil {
		t.Fatalf("enter on an idle gate: %v", err)
	}
	locked := make(chan error, 1)
	go func() { locked <- g.lock(ctx, "r") }()
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
	if err := g.enter(done, "b"); err == nil {
		t.Fatal("a new call entered while a retry alone waits for its turn")
	}
	g.leave("a")
	if err := <-locked; err != nil {
		t.Fatalf("lock after the call left: %v", err)
	}
	if inflight, waiting, solo := gateState(&g); inflight != 0 || waiting != 0 || solo != "r" {
		t.Fatalf("gate after lock: inflight %d waiting %d solo %q", inflight, waiting, solo)
	}
	if err := g.enter(done, "b"); err == nil {
		t.Fatal("a new call entered during a retry alone")
	}
	if err := g.lock(done, "c"); err == nil {
		t.Fatal("a second retry alone ran with the first")
	}
	if _, waiting, _ := gateState(&g); waiting != 0 {
		t.Fatalf("a retry that gave up is still counted waiting (%d)", waiting)
	}
	g.unlock()
	if err := g.enter(ctx, "b"); err != nil {
		t.Fatalf("enter after the retry alone: %v", err)
	}
	g.leave("b")
}

// TestSoloGateOwnCall: a call's own questions never hold up its retry
// alone, nor does a retry waiting or running keep out the questions of the
// call it is for, or more questions of a call already in flight (a
// call's guards all start before any is waited for; a wrapper's next may
// ask the same plugin again): either would wait for itself.
func TestSoloGateOwnCall(t *testing.T) {
	var g soloGate
	ctx := context.Background()
	done, cancel := context.WithCancel(ctx)
	cancel()

	// The call's other guard is still in flight: its retry runs anyway.
	if err := g.enter(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if err := g.lock(done, "a"); err != nil {
		t.Fatalf("a retry alone waited for its own call's question: %v", err)
	}
	if err := g.enter(done, "a"); err != nil {
		t.Fatalf("the retried call's own question was kept out: %v", err)
	}
	if err := g.enter(done, "b"); err == nil {
		t.Fatal("another call entered during a retry alone")
	}
	g.leave("a")
	g.leave("a")
	g.unlock()

	// Call b is in flight; a retry for c waits for it, yet b may ask again.
	if err := g.enter(ctx, "b"); err != nil {
		t.Fatal(err)
	}
	locked := make(chan error, 1)
	go func() { locked <- g.lock(ctx, "c") }()
	for {
		if _, waiting, _ := gateState(&g); waiting == 1 {
			break
		}
		runtime.Gosched()
	}
	if err := g.enter(done, "b"); err != nil {
		t.Fatalf("a call in flight could not ask again while a retry waits: %v", err)
	}
	g.leave("b")
	g.leave("b")
	if err := <-locked; err != nil {
		t.Fatalf("lock after b left: %v", err)
	}
	g.unlock()
	if inflight, waiting, solo := gateState(&g); inflight != 0 || waiting != 0 || solo != "" {
		t.Fatalf("gate at the end: inflight %d waiting %d solo %q", inflight, waiting, solo)
	}
}
