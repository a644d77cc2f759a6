package main

import (
	"context"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// TestGroupCommit: the lines of a batch are fsynced once, when the batch
// is in (Flush), not one by one; the receipts name the lines as they are
// on disk, and the log verifies.
func TestGroupCommit(t *testing.T) {
	s := logSettings(t)
	h := newHarness()
	h.mustStart(t, s)
	var receipts []uint64
	for i := range 20 {
		call, r := result(i)
		rc, ok := h.observeWithReceipt(context.Background(), call, r)
		if !ok {
			t.Fatalf("no receipt for result %d", i)
		}
		receipts = append(receipts, rc.Seq)
	}
	if got := h.syncs.Load(); got != 0 {
		t.Errorf("%d fsyncs before the batch was in, want 0", got)
	}
	if err := h.flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := h.syncs.Load(); got != 1 {
		t.Errorf("%d fsyncs for a batch of 20, want 1", got)
	}
	if err := h.flush(context.Background()); err != nil || h.syncs.Load() != 1 {
		t.Errorf("a flush with nothing written: %v, %d fsyncs in all", err, h.syncs.Load())
	}
	h.mustStop(t)
	lines := readLines(t, s.path) // verifies
	if len(lines) != 20 {
		t.Fatalf("%d lines, want 20", len(lines))
	}
	for i, l := range lines {
		if receipts[i] != l.Seq {
			t.Errorf("receipt %d names seq %d, the line has %d", i, receipts[i], l.Seq)
		}
	}
}

// TestGroupCommitFailure: when a batch's fsync fails, its lines are cut
// off and the batch is held, unacknowledged, while calls are denied; once
// fsync works again the same lines (same seqs and hashes as their
// receipts) are written and fsynced, and the batch is acknowledged. A
// batch given up on (its stream ended) is not acknowledged and leaves no
// line: sent again, it is written once.
func TestGroupCommitFailure(t *testing.T) {
	s := logSettings(t)
	var fs failingFsync
	var mu sync.Mutex
	denied := 0
	h := newHarness()
	h.fsync = fs.sync
	h.setHost(failureHost{
		deny: func(context.Context, func() string) (func(context.Context) error, error) {
			mu.Lock()
			denied++
			mu.Unlock()
			return func(context.Context) error { return nil }, nil
		},
	})
	h.mustStart(t, s)
	if err := observeBatch(context.Background(), h, 0, 2); err != nil {
		t.Fatal(err)
	}

	fs.fail.Store(true)
	var receipts []auditlog.Tip
	for i := 2; i < 5; i++ {
		call, r := result(i)
		rc, _ := h.observeWithReceipt(context.Background(), call, r)
		receipts = append(receipts, auditlog.Tip{Seq: rc.Seq, Hash: rc.Hash})
	}
	done := make(chan error, 1)
	go func() { done <- h.flush(context.Background()) }()
	// The first fsync and a few retries.
	testkit.WaitFor(t, 10*time.Second, "retries", func() bool { return fs.calls.Load() >= 4 })
	select {
	case err := <-done:
		t.Fatalf("the batch was acknowledged (%v) while its lines could not reach the disk", err)
	default:
	}
	if got := logIDs(t, s.path); got != "call-0 call-1" {
		t.Errorf("log ids while failing %q: lines of the failed batch stayed", got)
	}
	mu.Lock()
	if denied != 1 {
		t.Errorf("calls denied by %d guards while failing, want 1", denied)
	}
	mu.Unlock()
	fs.fail.Store(false)
	if err := <-done; err != nil {
		t.Fatalf("flush once fsync works again: %v", err)
	}
	lines := readLines(t, s.path)
	if got := logIDs(t, s.path); got != "call-0 call-1 call-2 call-3 call-4" {
		t.Fatalf("log ids %q", got)
	}
	for i, rc := range receipts {
		if l := lines[2+i]; l.Seq != rc.Seq || l.Hash != rc.Hash {
			t.Errorf("receipt %+v, the line written again has seq %d hash %s", rc, l.Seq, l.Hash)
		}
	}

	// Given up on: the stream ends while the fsync fails.
	fs.fail.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		for fs.calls.Load() < 8 {
			time.Sleep(time.Millisecond)
		}
		cancel()
	}()
	if err := observeBatch(ctx, h, 5, 7); err == nil || !strings.Contains(err.Error(), "not on disk") {
		t.Errorf("flush of a batch given up on = %v, want an error", err)
	}
	fs.fail.Store(false)
	if err := observeBatch(context.Background(), h, 5, 8); err != nil { // sent again, and one more
		t.Fatal(err)
	}
	h.mustStop(t)
	if got := logIDs(t, s.path); got != "call-0 call-1 call-2 call-3 call-4 call-5 call-6 call-7" {
		t.Errorf("log ids %q", got)
	}
}

// TestGroupCommitClosedWhileFailing: a log closed while its batch's fsync
// fails (the lines cut off, to be written again) leaves the batch
// unacknowledged, even though the closing fsync works: its lines are not
// on disk.
func TestGroupCommitClosedWhileFailing(t *testing.T) {
	s := logSettings(t)
	var fs failingFsync
	h := newHarness()
	h.fsync = fs.sync
	h.mustStart(t, s)
	if err := observeBatch(context.Background(), h, 0, 1); err != nil {
		t.Fatal(err)
	}
	fs.fail.Store(true)
	done := make(chan error, 1)
	go func() { done <- observeBatch(context.Background(), h, 1, 3) }()
	// The first batch's fsync, this one's, a retry.
	testkit.WaitFor(t, 10*time.Second, "retries", func() bool { return fs.calls.Load() >= 3 })
	fs.fail.Store(false)
	h.mustStop(t)
	if err := <-done; err == nil {
		t.Fatal("a batch whose lines were cut off when the log closed was acknowledged")
	}
	if got := logIDs(t, s.path); got != "call-0" {
		t.Errorf("log ids %q, want only the first batch's", got)
	}
	// The next log's batches are not failed for it.
	h.mustStart(t, s)
	if err := observeBatch(context.Background(), h, 1, 3); err != nil {
		t.Fatalf("the batch sent again: %v", err)
	}
	h.mustStop(t)
	if got := logIDs(t, s.path); got != "call-0 call-1 call-2" {
		t.Errorf("log ids %q", got)
	}
}

// BenchmarkAuditFsync16 measures results recorded per second with fsync
// = always and 16 callers, each waiting for its result to be acknowledged
// (as a critical audit's results are: on disk) before its next call. One
// deliverer hands the results queued meanwhile to the auditor as a batch,
// as the host's result stream does. "per-line" fsyncs each line as it is
// written (the plugin before group commit); "group" fsyncs once per batch
// (Flush). Reported as calls/s.
func BenchmarkAuditFsync16(b *testing.B) {
	for _, mode := range []string{"per-line", "group"} {
		b.Run(mode, func(b *testing.B) {
			s, err := Config{Path: filepath.Join(b.TempDir(), "audit.log")}.settings()
			if err != nil {
				b.Fatal(err)
			}
			a := newAuditor()
			if err := a.start(s, hclog.NewNullLogger()); err != nil {
				b.Fatal(err)
			}
			defer a.stop()
			type pending struct {
				i    int
				done chan struct{}
			}
			var (
				mu    sync.Mutex
				queue []pending
				wake  = make(chan struct{}, 1)
				stop  = make(chan struct{})
			)
			deliverer := sync.WaitGroup{}
			deliverer.Go(func() {
				for {
					select {
					case <-stop:
						return
					case <-wake:
					}
					mu.Lock()
					batch := queue
					queue = nil
					mu.Unlock()
					for _, p := range batch {
						call, r := result(p.i)
						a.observeWithReceipt(context.Background(), call, r)
						if mode == "per-line" {
							_ = a.flush(context.Background())
						}
					}
					_ = a.flush(context.Background())
					for _, p := range batch {
						close(p.done)
					}
				}
			})
			var next sync.Mutex
			n := 0
			start := time.Now()
			b.SetParallelism(8) // 16 callers on 2 cores
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					next.Lock()
					n++
					i := n
					next.Unlock()
					p := pending{i: i, done: make(chan struct{})}
					mu.Lock()
					queue = append(queue, p)
					mu.Unlock()
					select {
					case wake <- struct{}{}:
					default:
					}
					<-p.done
				}
			})
			b.ReportMetric(float64(n)/time.Since(start).Seconds(), "calls/s")
			close(stop)
			deliverer.Wait()
		})
	}
}
