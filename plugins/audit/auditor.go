package main

import (
	"context"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

// auditor turns results into log lines. It lives as long as the process:
// the host may apply the plugin again on the same process, which opens the
// log afresh.
type auditor struct {
	now   func() time.Time     // time.Now; fixed in tests
	fsync func(*os.File) error // (*os.File).Sync; counted in tests

	// mu serialises observe, start and stop. The host sends results one at
	// a time on one stream, so it costs nothing there; it keeps seq, time
	// and file order the same if results ever arrive in parallel.
	mu     sync.Mutex
	log    hclog.Logger
	file   *logFile // nil before start and after stop
	record bool
}

func newAuditor() *auditor {
	return &auditor{now: time.Now, fsync: (*os.File).Sync, log: hclog.NewNullLogger()}
}

// start opens the log s names, closing one opened by an earlier apply.
func (a *auditor) start(s settings, log hclog.Logger) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.log = log
	// Close first: the lock on the log is per open file, so reopening the
	// same path while the old one is open would refuse.
	if err := a.closeLocked(); err != nil {
		log.Error("closing the previous audit log", "error", err)
	}
	f, err := openLog(s, a.fsync, log)
	if err != nil {
		return err
	}
	a.file, a.record = f, s.record
	tip := f.tip()
	// The tip, logged where the host keeps plugin logs, is the record that
	// shows a log later cut short or rewritten (see package auditlog).
	log.Info("audit log opened", "path", s.path, "lines", tip.Seq, "hash", tip.Hash, "fsync", string(s.fsync))
	return nil
}

// stop flushes, fsyncs and closes the log.
func (a *auditor) stop() error {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.closeLocked()
}

func (a *auditor) closeLocked() error {
	if a.file == nil {
		return nil
	}
	f := a.file
	a.file = nil
	tip := f.tip()
	err := f.close()
	a.log.Info("audit log closed", "path", f.path, "lines", tip.Seq, "hash", tip.Hash)
	return err
}

// observe is the stage-5 listener: one line per result, whatever the
// outcome. It cannot fail the call, so a line it cannot write is logged.
func (a *auditor) observe(_ context.Context, call *sdk.Call, r sdk.ToolResult) {
	a.mu.Lock()
	defer a.mu.Unlock()
	id := call.ID
	if id == "" {
		id = r.ID
	}
	if a.file == nil {
		a.log.Error("result after the audit log was closed: not recorded", "id", id, "tool", call.Name)
		return
	}
	l := auditlog.Line{
		Time:       a.now(), // under mu, so time never goes back as seq goes up (clock steps aside)
		ID:         id,
		Caller:     call.Caller,
		Tool:       call.Name,
		OK:         r.OK,
		DecidedBy:  r.DecidedBy,
		Duration:   r.Duration,
		ArgsSHA256: auditlog.Digest(call.Arguments),
	}
	if r.Error != nil {
		l.Code = r.Error.Code
	}
	if a.record {
		l.Arguments = auditlog.ArgumentsJSON(call.Arguments)
	}
	if err := a.file.append(l); err != nil {
		a.log.Error("audit log write failed", "id", id, "tool", call.Name, "error", err)
	}
}
