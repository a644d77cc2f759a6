package testkit

import (
	"testing"
	"time"
)

// Tick is how often WaitFor checks its condition.
const Tick = 10 * time.Millisecond

// WaitFor waits until cond holds, checking it every Tick, and fails t
// saying what it waited for when it has not held within bound. A bound is
// against a hang: the test waits for the condition, not for a time.
func WaitFor(t testing.TB, bound time.Duration, what string, cond func() bool) {
	t.Helper()
	if !Eventually(bound, cond) {
		t.Fatalf("waited %v for %s", bound, what)
	}
}

// Eventually reports whether cond held within bound, checking it every
// Tick; for a test that wants to say more than WaitFor does when it fails.
func Eventually(bound time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(bound)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(Tick)
	}
}
