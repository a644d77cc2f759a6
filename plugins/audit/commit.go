package main

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// flush is the result listener's Flush: once the SDK has given it every
// result of a batch, it fsyncs their lines at once (fsync = always), and
// only then does the host hear the batch was handled. So one fsync covers
// the calls that came together (up to a batch of 256), with the promise
// per-line fsyncs kept: a result is acknowledged only once its line is on
// disk, and a receipt names a line on disk.
//
// When the fsync fails the lines are cut off and the log is unwritable, as
// when a line cannot be written (unwritable.go): calls are denied (unless
// fail_open), and the lines are written and fsynced again, spaced out,
// until that works, the stream ends or the log is closed. It returns an
// error (the batch is not acknowledged, and the host sends it again) in
// the last two cases.
func (a *auditor) flush(ctx context.Context) error {
	a.order.Lock()
	defer a.order.Unlock()
	a.mu.Lock()
	defer a.mu.Unlock()
	wait := retryFirst
	for {
		if a.lostOnClose {
			// The log was closed (a stop, or an apply opening another)
			// with lines of this batch cut off or not fsynced.
			a.lostOnClose = false
			return errors.New("audit log: closed before the batch's lines reached the disk")
		}
		if a.file == nil {
			// Closed since the batch was written: close fsyncs what was
			// written, and lostOnClose says when it could not.
			return nil
		}
		err := a.file.commit()
		if err == nil {
			a.writable()
			return nil
		}
		a.markUnwritable(err)
		a.mu.Unlock()
		t := time.NewTimer(wait)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			a.mu.Lock()
			if a.file != nil {
				a.file.dropUnsynced()
			}
			a.log.Warn("result stream ended while a batch's lines waited to reach the disk: not acknowledged", "error", err)
			return fmt.Errorf("audit log: the batch's lines are not on disk: %w", err)
		}
		a.mu.Lock()
		wait = min(2*wait, retryMax)
	}
}
