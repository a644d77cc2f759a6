package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

var (
	errClosed = errors.New("audit log is closed")
	// errLocked is lockFile's answer when another open file holds the lock.
	errLocked = errors.New("locked by another process")
)

// recentIDs is how many call ids at the end of the log an opened log
// remembers (logFile.recent). The host redelivers at most the batches a dead
// process did not acknowledge, a few hundred results at most.
const recentIDs = 4096

// logFile is an open audit log and its fsync policy.
//
// Each line is one write(2) straight to the file, without a buffer in the
// process: a plugin killed by the host loses no line it had written, and
// the fsync policy alone decides what a machine crash can lose.
type logFile struct {
	path   string
	f      *os.File
	w      *auditlog.Writer
	policy fsyncPolicy
	sync   func() error // fsyncs f
	// recent holds the non-empty ids of the last recentIDs lines found when
	// the log was opened: results the host sends again after a process died
	// before acknowledging them, or that the process before a reload had
	// written. Read only after opening.
	recent map[string]struct{}

	mu     sync.Mutex
	dirty  bool // lines written since the last fsync (fsync = interval)
	closed bool

	stopTicker chan struct{} // fsync = interval only
	ticker     sync.WaitGroup
}

// pendingLog is a log whose lock another process held at apply: the process
// before a hot reload, which still writes results until the host stops it.
// The first result opens it (auditor.tryOpenLocked).
type pendingLog struct {
	s       settings
	f       *os.File // open, unlocked, not read yet
	created bool
}

// openLog opens (or creates) the log, takes its lock, verifies what it
// holds and continues its chain. It refuses a log that does not verify:
// appending would bury the damage under lines that chain from it.
//
// When another process holds the lock it returns a pendingLog instead,
// after checking what needs no lock: the folder, the file, its mode.
// Verifying must wait for the lock: the holder may be in the middle of a
// line.
func openLog(s settings, fsync func(*os.File) error, log hclog.Logger) (*logFile, *pendingLog, error) {
	f, created, err := openFile(s, log)
	if err != nil {
		return nil, nil, err
	}
	switch err := lockFile(f); {
	case errors.Is(err, errLocked):
		return nil, &pendingLog{s: s, f: f, created: created}, nil
	case err != nil:
		f.Close()
		return nil, nil, fmt.Errorf("audit log %s: cannot lock it: %w", s.path, err)
	}
	lf, err := continueLog(f, s, created, fsync, log)
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return lf, nil, nil
}

// openFile opens (or creates) the log and its folder and checks the file.
func openFile(s settings, log hclog.Logger) (f *os.File, created bool, err error) {
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return nil, false, fmt.Errorf("audit log: %w", err)
	}
	_, statErr := os.Stat(s.path)
	created = errors.Is(statErr, fs.ErrNotExist)
	// O_APPEND: every write lands at the end, wherever reading left the
	// offset. O_RDWR: the same descriptor reads the log to verify it.
	f, err = os.OpenFile(s.path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, false, fmt.Errorf("audit log: %w", err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, false, fmt.Errorf("audit log: %w", err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, false, fmt.Errorf("audit log %s: not a regular file", s.path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		// Left as it is: someone chose it, and chmod is not ours to do.
		log.Warn("audit log is readable or writable by others", "path", s.path, "mode", perm.String())
	}
	return f, created, nil
}

// continueLog verifies the log f, whose lock the caller holds, and makes
// the logFile that continues its chain. The caller closes f on error.
func continueLog(f *os.File, s settings, created bool, fsync func(*os.File) error, log hclog.Logger) (*logFile, error) {
	tip, ids, err := auditlog.ReadTail(f, recentIDs)
	var te *auditlog.TamperError
	if errors.As(err, &te) {
		return nil, fmt.Errorf("audit log %s is broken at line %d (%s): refusing to append to it; "+
			"check it with `audit verify %s` and move it aside to start a new log", s.path, te.Line, te.Reason, s.path)
	}
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", s.path, err)
	}
	if created {
		// The new file's name must survive a crash as much as its lines.
		// Best effort: some file systems refuse fsync on a folder.
		syncDir(filepath.Dir(s.path))
	}
	recent := make(map[string]struct{}, len(ids))
	for _, id := range ids {
		if id != "" {
			recent[id] = struct{}{}
		}
	}
	lf := &logFile{path: s.path, f: f, w: auditlog.NewWriter(f, tip), policy: s.fsync,
		sync: func() error { return fsync(f) }, recent: recent}
	if s.fsync == fsyncInterval {
		lf.stopTicker = make(chan struct{})
		lf.ticker.Go(func() { lf.syncEvery(s.interval, log) })
	}
	return lf, nil
}

func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// append writes one line and applies the fsync policy. An "fsync" error
// means the line is written but may not be on disk.
func (lf *logFile) append(l auditlog.Line) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.closed {
		return errClosed
	}
	if _, err := lf.w.Append(l); err != nil {
		return err
	}
	switch lf.policy {
	case fsyncAlways:
		if err := lf.sync(); err != nil {
			return fmt.Errorf("line %d written, but fsync: %w", lf.w.Tip().Seq, err)
		}
	case fsyncInterval:
		lf.dirty = true
	}
	return nil
}

// syncEvery fsyncs at most once per interval, and only when lines were
// written since the last time: writes never wait for the disk.
func (lf *logFile) syncEvery(interval time.Duration, log hclog.Logger) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-lf.stopTicker:
			return
		case <-t.C:
		}
		lf.mu.Lock()
		dirty := lf.dirty
		lf.dirty = false
		lf.mu.Unlock()
		// Outside mu: writes go on during the fsync, which covers at least
		// every line written before it started.
		if dirty {
			if err := lf.sync(); err != nil {
				log.Error("audit log fsync failed", "path", lf.path, "error", err)
			}
		}
	}
}

func (lf *logFile) tip() auditlog.Tip { return lf.w.Tip() }

// close stops the ticker, fsyncs (whatever the policy: a graceful stop
// loses nothing) and closes the file, which releases its lock.
func (lf *logFile) close() error {
	lf.mu.Lock()
	if lf.closed {
		lf.mu.Unlock()
		return nil
	}
	lf.closed = true
	lf.mu.Unlock()
	if lf.stopTicker != nil {
		close(lf.stopTicker)
		lf.ticker.Wait() // no fsync may run on a closed file
	}
	var errs []error
	if err := lf.sync(); err != nil {
		errs = append(errs, fmt.Errorf("audit log %s: fsync: %w", lf.path, err))
	}
	if err := lf.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("audit log %s: %w", lf.path, err))
	}
	return errors.Join(errs...)
}
