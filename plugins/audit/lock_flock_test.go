//go:build darwin || dragonfly || freebsd || linux || netbsd || openbsd

package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// startWhileHeld starts an old process on s that writes calls 0..n-1 and
// keeps the log, then applies next on s, logging into the returned buffer:
// the apply must succeed while the old one holds the lock.
func startWhileHeld(t *testing.T, s settings, n int, next *harness) (old *harness, logs *testkit.Buffer) {
	t.Helper()
	old = newHarness()
	old.mustStart(t, s)
	observeN(old, 0, n)
	logs = &testkit.Buffer{}
	if err := next.start(s, bufferLogger(logs)); err != nil {
		t.Fatalf("apply while the old process holds the log: %v", err)
	}
	return old, logs
}

func bufferLogger(b *testkit.Buffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Output: b, Level: hclog.Debug})
}

// observeAsync delivers results from to to-1 in order on a goroutine, as
// one stream would, each in a batch of its own (observe, then Flush); the
// channel closes when the last was acknowledged.
func observeAsync(ctx context.Context, h *harness, from, to int) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := from; i < to; i++ {
			call, r := result(i)
			h.observeWithReceipt(ctx, call, r)
			_ = h.flush(ctx)
		}
	}()
	return done
}

// stillWaiting fails the test if done closes within a short while.
func stillWaiting(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
		t.Fatalf("%s returned while another process held the log", what)
	case <-time.After(50 * time.Millisecond):
	}
}

func waitDone(t *testing.T, done <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatalf("%s still waits", what)
	}
}

func ids(lines []string) string { return strings.Join(lines, " ") }

func logIDs(t *testing.T, path string) string {
	t.Helper()
	var out []string
	for i, l := range readLines(t, path) { // verifies the log
		if l.Seq != uint64(i+1) {
			t.Errorf("line %d has seq %d", i+1, l.Seq)
		}
		out = append(out, l.ID)
	}
	return ids(out)
}

func callIDs(from, to int) string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf("call-%d", i))
	}
	return ids(out)
}

// A hot reload: the new process applies while the old one holds the log
// and writes; its results wait, and follow the old process's lines once
// that one stops. A result both got (the host delivers to both while they
// overlap) is written once.
func TestHandOver(t *testing.T) {
	for _, policy := range []string{"always", "interval"} {
		t.Run(policy, func(t *testing.T) {
			s, err := Config{Path: logSettings(t).path, Fsync: policy}.settings()
			if err != nil {
				t.Fatal(err)
			}
			next := newHarness()
			next.ticks.Store(1000)
			old, logs := startWhileHeld(t, s, 3, next)
			done := observeAsync(context.Background(), next, 4, 8)
			stillWaiting(t, done, "observe")
			observeN(old, 3, 5) // the old process goes on writing meanwhile
			stillWaiting(t, done, "observe")
			old.mustStop(t)
			waitDone(t, done, "observe after the old process stopped")
			observeN(next, 8, 9) // and on, without waiting
			next.mustStop(t)

			if got, want := logIDs(t, s.path), callIDs(0, 9); got != want {
				t.Errorf("log ids:\n %s\nwant\n %s", got, want)
			}
			if out := logs.String(); !strings.Contains(out, "already in the audit log: skipped: id=call-4") {
				t.Errorf("the skipped result is not logged:\n%s", out)
			}
		})
	}
}

// Stop while a result waits for the lock: stop returns at once and closes
// cleanly; the waiting result is not written and observe does not return
// (which would acknowledge it) until its stream ends.
func TestStopWhileWaitingForTheLock(t *testing.T) {
	s := logSettings(t)
	next := newHarness()
	old, logs := startWhileHeld(t, s, 2, next)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := observeAsync(ctx, next, 2, 4)
	stillWaiting(t, done, "observe")
	stopped := make(chan error, 1)
	go func() { stopped <- next.stop() }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("stop waits for the lock")
	}
	stillWaiting(t, done, "observe of a result the stopped process did not write")
	cancel() // the stream ends with the process
	waitDone(t, done, "observe after its stream ended")
	observeN(old, 4, 5)
	old.mustStop(t)

	if got, want := logIDs(t, s.path), ids([]string{"call-0", "call-1", "call-4"}); got != want {
		t.Errorf("log ids %s, want %s", got, want)
	}
	if out := logs.String(); !strings.Contains(out, "closed before its lock was free") ||
		!strings.Contains(out, "closed while the result waited for its lock") {
		t.Errorf("log:\n%s", out)
	}
}

// A stop before any result needs the lock closes the log it never locked.
func TestStopWithoutTheLock(t *testing.T) {
	s := logSettings(t)
	old := newHarness()
	old.mustStart(t, s)
	next := newHarness()
	next.mustStart(t, s)
	next.mustStop(t)
	observeN(next, 0, 1) // after stop: not recorded, returns
	old.mustStop(t)
	if got := logIDs(t, s.path); got != "" {
		t.Errorf("log ids %q, want none", got)
	}
}

// A stream that ends while its result waits: observe returns without
// writing it; a later result on a new stream waits again.
func TestStreamEndsWhileWaitingForTheLock(t *testing.T) {
	s := logSettings(t)
	old := newHarness()
	old.mustStart(t, s)
	next := newHarness()
	next.mustStart(t, s)
	ctx, cancel := context.WithCancel(context.Background())
	done := observeAsync(ctx, next, 0, 1)
	stillWaiting(t, done, "observe")
	cancel()
	waitDone(t, done, "observe after its stream ended")
	again := observeAsync(context.Background(), next, 1, 2)
	stillWaiting(t, again, "observe")
	old.mustStop(t)
	waitDone(t, again, "observe after the old process stopped")
	next.mustStop(t)
	if got := logIDs(t, s.path); got != "call-1" {
		t.Errorf("log ids %q, want call-1", got)
	}
}

// Past the bound the wait is an error naming the path and the likely cause,
// repeated; the result still waits and is written once the log is free.
func TestLockWaitBound(t *testing.T) {
	s := logSettings(t)
	next := newHarness()
	next.lockWait = 20 * time.Millisecond
	holder, logs := startWhileHeld(t, s, 0, next)
	done := observeAsync(context.Background(), next, 0, 1)
	if !testkit.Eventually(10*time.Second, func() bool { return strings.Count(logs.String(), "still locked by another process") >= 2 }) {
		t.Fatalf("no repeated error past the bound:\n%s", logs.String())
	}
	if out := logs.String(); !strings.Contains(out, "[ERROR]") || !strings.Contains(out, s.path) ||
		!strings.Contains(out, "second audit plugin") {
		t.Errorf("error does not name the path and the cause:\n%s", out)
	}
	stillWaiting(t, done, "observe past the bound")
	holder.mustStop(t)
	waitDone(t, done, "observe after the holder stopped")
	next.mustStop(t)
	if got := logIDs(t, s.path); got != "call-0" {
		t.Errorf("log ids %q, want call-0", got)
	}
}

// A log found broken once the lock is free is not appended to: every
// result says it is not recorded, and returns.
func TestHandOverOfABrokenLog(t *testing.T) {
	s := logSettings(t)
	next := newHarness()
	old, logs := startWhileHeld(t, s, 2, next)
	done := observeAsync(context.Background(), next, 2, 4)
	stillWaiting(t, done, "observe")
	// Damaged while the old process holds the lock (flock is advisory):
	// the new one reads it only once the old one let go.
	f, err := os.OpenFile(s.path, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":3,"not a line"}` + "\n"); err != nil {
		t.Fatal(err)
	}
	f.Close()
	before, _ := os.ReadFile(s.path)
	old.mustStop(t)
	waitDone(t, done, "observe on a broken log")
	observeN(next, 4, 5)
	next.mustStop(t)

	if after, _ := os.ReadFile(s.path); !bytes.Equal(after, before) {
		t.Errorf("the broken log was changed:\n%s", after)
	}
	out := logs.String()
	if !strings.Contains(out, "broken at line 3") || !strings.Contains(out, "refusing to append") {
		t.Errorf("the broken log is not reported:\n%s", out)
	}
	for i := 2; i < 5; i++ {
		if !strings.Contains(out, fmt.Sprintf("audit log write failed: id=call-%d", i)) {
			t.Errorf("result call-%d is not reported as not recorded:\n%s", i, out)
		}
	}
}
