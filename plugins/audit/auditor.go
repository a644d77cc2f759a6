package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/wire"
)

const (
	// defaultLockWait is how long a result waits for the log's lock before
	// the wait is reported as an error (and again each time as long
	// after). A hot reload's old process lets go within the host's drain
	// timeout; longer means something else holds the log.
	defaultLockWait = 2 * time.Minute
	// lockPoll is how often a waiting result tries the lock again: a
	// hand-over delays the first line by about this much.
	lockPoll = 5 * time.Millisecond
)

// auditor turns results into log lines. It lives as long as the process:
// the host may apply the plugin again on the same process, which opens the
// log afresh.
type auditor struct {
	now      func() time.Time     // time.Now; fixed in tests
	fsync    func(*os.File) error // (*os.File).Sync; counted in tests
	lockWait time.Duration        // defaultLockWait; short in tests

	// order keeps observe calls one at a time, in order, also while one
	// waits for the lock without holding mu (so that start and stop need
	// not wait for the lock too).
	order sync.Mutex

	// mu serialises writing, start and stop. The host sends results one at
	// a time on one stream, so it costs nothing there; it keeps seq, time
	// and file order the same if results ever arrive in parallel.
	mu      sync.Mutex
	log     hclog.Logger
	file    *logFile    // nil before start, after stop, and while pending
	pending *pendingLog // the log apply found locked, until a result opens it
	failed  error       // why opening the pending log failed; results are not recorded
	record  bool
	redact  bool
	changed chan struct{} // closed and replaced by start and stop: wakes a waiting observe
	written auditlog.Tip  // the line the current observe wrote (receipts.go); under order

	// lostOnClose is set when a log was closed with lines of a batch not
	// on disk (commit.go): the batch's flush fails, unacknowledged.
	lostOnClose bool

	// While the log cannot be written (see unwritable.go).
	host     failureHost                 // set by apply; zero in tests that need none
	failOpen bool                        // let calls through meanwhile
	failure  atomic.Pointer[string]      // why it cannot, nil when it can; read by the guard
	undoDeny func(context.Context) error // removes the guard that refuses calls
}

func newAuditor() *auditor {
	return &auditor{now: time.Now, fsync: (*os.File).Sync, lockWait: defaultLockWait,
		log: hclog.NewNullLogger(), changed: make(chan struct{})}
}

// start opens the log s names, closing one opened by an earlier apply.
//
// When another process holds the log's lock (the old process of a hot
// reload, which the host stops only once this apply succeeded), start
// succeeds without it and the first result waits for the lock (observeWithReceipt).
func (a *auditor) start(s settings, log hclog.Logger) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = log
	// Close first: the lock on the log is per open file, so reopening the
	// same path while the old one is open would find it held.
	if err := a.closeLocked(); err != nil {
		log.Error("closing the previous audit log", "error", err)
	}
	f, p, err := openLog(s, a.fsync, log)
	if err != nil {
		return err
	}
	a.record, a.redact = s.record, s.redact
	a.failOpen = s.failOpen
	if p != nil {
		if err := otherHostWriter(s.path); err != nil {
			if os.Getenv(wire.EnvExplainOnly) != "1" {
				p.f.Close()
				return err
			}
			// A host that only explains never writes: it may run beside
			// the one that does.
			log.Info("audit log written by another host; this host only explains, so nothing will be written", "path", s.path)
		}
		a.pending = p
		log.Info("audit log is locked by another process: results wait until it lets go "+
			"(the process before a reload; otherwise a second audit plugin on the same file)", "path", s.path)
		return nil
	}
	a.file = f
	a.logOpened(f, s)
	return nil
}

// logOpened logs the tip, where the host keeps plugin logs: the record that
// shows a log later cut short or rewritten (see package auditlog).
func (a *auditor) logOpened(f *logFile, s settings) {
	tip := f.tip()
	a.log.Info("audit log opened", "path", s.path, "lines", tip.Seq, "hash", tip.Hash, "fsync", string(s.fsync))
}

// stop flushes, fsyncs and closes the log.
func (a *auditor) stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closeLocked()
}

func (a *auditor) closeLocked() error {
	close(a.changed)
	a.changed = make(chan struct{})
	a.failed = nil
	// A guard refusing calls belongs to the scope that is ending, and the
	// host removes it with the scope; the problem ends with this log.
	a.undoDeny = nil
	a.failure.Store(nil)
	if p := a.pending; p != nil {
		a.pending = nil
		a.log.Info("audit log closed before its lock was free: nothing written to it", "path", p.s.path)
		if err := p.f.Close(); err != nil {
			return fmt.Errorf("audit log %s: %w", p.s.path, err)
		}
		return nil
	}
	if a.file == nil {
		return nil
	}
	f := a.file
	a.file = nil
	tip := f.tip()
	err := f.close()
	f.mu.Lock()
	a.lostOnClose = a.lostOnClose || f.lost
	f.mu.Unlock()
	a.log.Info("audit log closed", "path", f.path, "lines", tip.Seq, "hash", tip.Hash)
	return err
}

// tryOpenLocked opens the pending log if its lock is free now. It reports
// whether the wait is over: the log is open, or opening it failed (failed).
func (a *auditor) tryOpenLocked() bool {
	p := a.pending
	err := lockFile(p.f)
	if errors.Is(err, errLocked) {
		return false
	}
	a.pending = nil
	var f *logFile
	if err != nil {
		err = fmt.Errorf("audit log %s: cannot lock it: %w", p.s.path, err)
	} else {
		// Read now, not at apply: the old process's last line is the tip,
		// and its last ids are what this one must not write again.
		f, err = continueLog(p.f, p.s, p.created, a.fsync, a.log)
	}
	if err != nil {
		p.f.Close()
		// Too late to fail the apply: every result says so instead, as a
		// line that cannot be written does.
		a.failed = err
		a.log.Error("audit log could not be opened after another process let go of it: results are not recorded",
			"path", p.s.path, "error", err)
		return true
	}
	a.file = f
	a.logOpened(f, p.s)
	return true
}

// observeInOrder writes the line, waiting for the log's lock if need be. It
// reports whether the result must not be acknowledged (see
// observeWithReceipt).
func (a *auditor) observeInOrder(ctx context.Context, call *sdk.Call, r sdk.ToolResult) (hold bool) {
	id := call.ID
	if id == "" {
		id = r.ID
	}
	a.mu.Lock()
	var (
		waiting bool
		since   time.Time
		warnAt  time.Duration
		poll    *time.Ticker
	)
	for a.file == nil && a.pending != nil && !a.tryOpenLocked() {
		path, log, changed := a.pending.s.path, a.log, a.changed
		if !waiting {
			waiting, since, warnAt = true, time.Now(), a.lockWait
			poll = time.NewTicker(lockPoll)
			defer poll.Stop()
			log.Debug("result waits for the audit log's lock", "path", path, "id", id)
		}
		// Not under mu: start and stop must not wait for the lock.
		a.mu.Unlock()
		select {
		case <-poll.C:
		case <-changed:
		case <-ctx.Done():
			// The stream is gone, so the result is not acknowledged either.
			log.Warn("result stream ended while the result waited for the audit log's lock: not recorded by this process",
				"path", path, "id", id, "tool", call.Name)
			return false
		}
		if waited := time.Since(since); waited >= warnAt {
			// Still waiting, rather than dropping the result: while it
			// waits the host keeps it, and the next process (or this one,
			// once the holder lets go) writes it. Dropped, it would be lost.
			log.Error("audit log is still locked by another process: results wait, unrecorded; "+
				"is a second audit plugin (another host or deployment) writing the same file?",
				"path", path, "waited", waited.Round(time.Second), "id", id)
			warnAt += a.lockWait
		}
		a.mu.Lock()
	}
	defer a.mu.Unlock()
	if a.file == nil {
		switch {
		case a.failed != nil:
			a.log.Error("audit log write failed", "id", id, "tool", call.Name, "error", a.failed)
		case waiting:
			a.log.Error("audit log closed while the result waited for its lock: not recorded by this process, not acknowledged",
				"id", id, "tool", call.Name)
			return true
		default:
			a.log.Error("result after the audit log was closed: not recorded", "id", id, "tool", call.Name)
		}
		return false
	}
	if _, ok := a.file.recent[id]; ok && id != "" {
		// Written by a process that died before the host heard it was, or
		// by the process before a reload, which saw it too.
		a.log.Debug("result already in the audit log: skipped", "id", id, "tool", call.Name)
		return false
	}
	l := auditlog.Line{
		Time:          a.now(), // under mu, so time never goes back as seq goes up (clock steps aside)
		ID:            id,
		Caller:        call.Caller,
		Principal:     call.Principal.ID,
		PrincipalKind: call.Principal.Kind,
		Tool:          call.Name,
		OK:            r.OK,
		DecidedBy:     r.DecidedBy,
		Duration:      r.Duration,
		ArgsSHA256:    auditlog.Digest(call.Arguments),
	}
	if r.Error != nil {
		l.Code = string(r.Error.Code)
	}
	if a.record {
		l.Arguments = a.recorded(call.Arguments)
	}
	for _, d := range r.Shadow {
		l.Shadow = append(l.Shadow, auditlog.Shadow{Stage: d.Stage, Plugin: d.Plugin, Rule: d.Rule, Would: d.Would, Reason: d.Reason})
	}
	if len(call.Approval) > 0 {
		l.Approval = auditlog.ArgumentsJSON(call.Approval)
	}
	if len(call.Elicitations) > 0 {
		l.Elicitations = auditlog.ArgumentsJSON(call.Elicitations)
	}
	if l.Principal != "" || l.PrincipalKind != "" {
		// Always with a principal, so that a line says it has none (a
		// replay then knows its group rules did not select it).
		l.PrincipalAttributes = append([]string{}, call.Principal.Attributes...)
	}
	if err := a.file.append(l); err != nil {
		return a.writeFailed(ctx, l, call.Name, err)
	}
	a.written = a.file.tip()
	return false
}
