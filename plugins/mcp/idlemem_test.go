package main

import (
	"context"
	"testing"
	"time"
)

// TestIdleBridgeReleasesMemory: a bridge gives its free memory back once a
// whole interval passed without a call, once per idle spell, and again
// after calls came and stopped. The test drives the intervals itself: a
// tick is taken only once the one before it was handled, so the count of
// releases is read between ticks without waiting on a clock.
func TestIdleBridgeReleasesMemory(t *testing.T) {
	tick := make(chan time.Time)
	released := 0
	m := startInMemoryWith(t, Config{Command: []string{"unused"}, Prefix: strPtr("t"), Timeout: "5s"}, func(b *bridge) {
		b.idle.tick = tick
		b.idle.release = func() { released++ } // on the bridge's goroutine, read between ticks
	})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	send := func() {
		t.Helper()
		select {
		case tick <- time.Time{}:
		case <-ctx.Done():
			t.Fatal("the bridge took no tick")
		}
	}
	// ticks sends n ticks and one more, taken only once the n-th was
	// handled.
	ticks := func(n int) {
		t.Helper()
		for range n + 1 {
			send()
		}
	}
	ticks(3)
	if released != 1 {
		t.Fatalf("after three idle intervals: %d releases, want 1", released)
	}
	if _, err := m.call(t, ctx, "t_echo", `{"message":"x"}`); err != nil {
		t.Fatal(err)
	}
	// The interval with the call starts a new spell (a bridge that missed
	// the call would release nothing more), the next one releases, the
	// last is taken only once that was handled.
	ticks(2)
	if released != 2 {
		t.Fatalf("after calls stopped again: %d releases, want 2", released)
	}
}
