package main

import (
	"context"
	"fmt"
	"time"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

// When a line cannot be written (a full disk, an I/O error), the result
// that produced it is held, unacknowledged, and written again until it can
// be: the host keeps the results after it queued meanwhile, so nothing is
// lost, and a result is acknowledged only once it is written. While the
// log cannot be written, the plugin denies every call with a guard it adds
// for that time only (unless fail_open), and reports the problem to the
// host, which shows it in `host status`.

const (
	// retryFirst and retryMax space the attempts to write a held line.
	retryFirst = 100 * time.Millisecond
	retryMax   = 2 * time.Second
	// hostCallTimeout bounds the calls to the host that announce a problem
	// or its end.
	hostCallTimeout = 5 * time.Second
)

// failureHost is what the auditor asks of the host while the log cannot be
// written; in the plugin it is the apply's sdk.Context (see hostOf).
type failureHost struct {
	// deny adds a guard denying every call with reason(); undo removes it.
	deny func(ctx context.Context, reason func() string) (undo func(context.Context) error, err error)
	// report tells the host the problem, "" when it is over.
	report func(ctx context.Context, problem string) error
}

// hostOf is the failureHost of a plugin's apply.
func hostOf(p *sdk.Context) failureHost {
	return failureHost{
		deny: func(ctx context.Context, reason func() string) (func(context.Context) error, error) {
			h, err := p.AddGuard(ctx, sdk.Guard{Check: func(context.Context, *sdk.Call) (string, error) { return reason(), nil }})
			if err != nil {
				return nil, err
			}
			return h.Dispose, nil
		},
		report: p.ReportProblem,
	}
}

// writeFailed handles a line the log could not take: it enters the failing
// state and tries again, spaced out, until the line is written, the result
// stream ends or the log is closed. a.mu is held, and released while it
// waits. It reports whether the result must not be acknowledged.
func (a *auditor) writeFailed(ctx context.Context, l auditlog.Line, tool string, err error) (hold bool) {
	a.markUnwritable(err)
	wait := retryFirst
	for {
		a.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			a.mu.Lock()
			// The stream is gone, so the result is not acknowledged either:
			// the host of a critical plugin sends it to the next process.
			a.log.Warn("result stream ended while the result waited for the audit log to be writable: not recorded by this process",
				"id", l.ID, "tool", tool)
			return false
		}
		a.mu.Lock()
		if a.file == nil {
			a.log.Error("audit log closed while a result waited to be written: not recorded by this process, not acknowledged",
				"id", l.ID, "tool", tool)
			return true
		}
		err := a.file.append(l)
		if err == nil {
			a.written = a.file.tip()
			a.log.Info("audit log written again after a failure", "id", l.ID, "seq", a.file.tip().Seq)
			a.writable()
			return false
		}
		a.markUnwritable(err)
		wait = min(2*wait, retryMax)
	}
}

// markUnwritable records that the log cannot be written, and on the first failure
// denies calls (unless failOpen) and tells the host. a.mu is held.
func (a *auditor) markUnwritable(err error) {
	path := ""
	if a.file != nil {
		path = a.file.path
	}
	reason := fmt.Sprintf("audit log %s cannot be written (%v): every call is refused until it can", path, err)
	if a.failOpen {
		reason = fmt.Sprintf("audit log %s cannot be written (%v): results wait to be written", path, err)
	}
	prev := a.failure.Swap(&reason)
	if prev != nil && *prev == reason {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostCallTimeout)
	defer cancel()
	if prev == nil {
		a.log.Error("audit log write failed: results are held until it can be written", "path", path, "error", err, "fail_open", a.failOpen)
		if !a.failOpen && a.host.deny != nil {
			undo, derr := a.host.deny(ctx, func() string {
				if r := a.failure.Load(); r != nil {
					return *r
				}
				return ""
			})
			if derr != nil {
				a.log.Error("cannot add the guard that refuses calls while the audit log cannot be written", "error", derr)
			}
			a.undoDeny = undo
		}
	}
	if a.host.report != nil {
		if rerr := a.host.report(ctx, reason); rerr != nil {
			a.log.Error("cannot report the audit log's problem to the host", "error", rerr)
		}
	}
}

// writable ends the failing state, if any. a.mu is held.
func (a *auditor) writable() {
	if a.failure.Swap(nil) == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), hostCallTimeout)
	defer cancel()
	if undo := a.undoDeny; undo != nil {
		a.undoDeny = nil
		if err := undo(ctx); err != nil {
			a.log.Error("cannot remove the guard that refused calls while the audit log could not be written", "error", err)
		}
	}
	if a.host.report != nil {
		if err := a.host.report(ctx, ""); err != nil {
			a.log.Error("cannot tell the host the audit log's problem is over", "error", err)
		}
	}
}

// setHost sets what the auditor asks of the host while the log cannot be
// written, for the apply about to start.
func (a *auditor) setHost(h failureHost) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.host = h
}
