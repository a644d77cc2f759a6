package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
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
// the fsync policy alone decides what a machine crash can lose. With
// fsync = always, one fsync covers every line of a batch of results
// (commit), before the host hears the batch was handled.
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
	dirty  bool  // lines written since the last fsync (fsync = interval)
	closed bool  //
	size   int64 // the file's length after its last complete line
	// uncut is set when cutting a failed line back failed too: nothing is
	// appended until a cut succeeds, since a line after part of one would
	// break the chain.
	uncut bool

	// Group commit (fsync = always): lines are written as results come and
	// fsynced together once their batch is in (commit), before the batch
	// is acknowledged. unsynced are the lines written since the last
	// fsync, as given to append (sealing them again after the same tip
	// gives the same seq and hash); syncedSize and syncedTip are where the
	// file ended then. rewrite is set when they were cut back after a
	// failed fsync and must be written again.
	unsynced   []auditlog.Line
	syncedSize int64
	syncedTip  auditlog.Tip
	rewrite    bool
	// lost is set by close when lines written since the last commit did
	// not reach the disk (cut off after a failed fsync, or the closing
	// fsync failed): their batch must not be acknowledged.
	lost bool

	stopTicker chan struct{} // fsync = interval only
	ticker     sync.WaitGroup

	signer *signer // nil unless the config names a key (signing.go)
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
	if err := recordWriter(s.path); err != nil {
		log.Warn("a second writer of this log will not be told who writes it", "error", err)
	}
	size, cut, err := cutPartialLine(f)
	if err != nil {
		return nil, fmt.Errorf("audit log %s: %w", s.path, err)
	}
	if cut > 0 {
		// What a write cut short by a full disk or a crash leaves: not a
		// line, so not part of the chain; the lines before it verify below.
		log.Warn("audit log ended in part of a line, left by a write that failed: removed it", "path", s.path, "bytes", cut)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, fmt.Errorf("audit log %s: %w", s.path, err)
	}
	tip, ids, last, err := auditlog.ReadTailSigned(f, recentIDs)
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
	lf := &logFile{path: s.path, f: f, policy: s.fsync, sync: func() error { return fsync(f) }, recent: recent, size: size}
	lf.w = auditlog.NewWriter(countingWriter{lf}, tip)
	if s.keys != nil {
		if err := lf.startSigning(s.keys, last, log); err != nil {
			return nil, err
		}
	}
	if s.fsync == fsyncInterval {
		lf.stopTicker = make(chan struct{})
		lf.ticker.Go(func() { lf.syncEvery(s.interval, log) })
	}
	return lf, nil
}

// cutPartialLine truncates f after its last newline when it ends in part
// of a line, and returns its new size and how many bytes it removed.
func cutPartialLine(f *os.File) (size, cut int64, err error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, 0, err
	}
	size = fi.Size()
	end := size
	buf := make([]byte, 64<<10)
	for end > 0 {
		n := min(int64(len(buf)), end)
		if _, err := f.ReadAt(buf[:n], end-n); err != nil {
			return 0, 0, err
		}
		if i := bytes.LastIndexByte(buf[:n], '\n'); i >= 0 {
			end = end - n + int64(i) + 1
			break
		}
		end -= n
	}
	if end == size {
		return size, 0, nil
	}
	if err := f.Truncate(end); err != nil {
		return 0, 0, fmt.Errorf("cannot remove the part of a line it ends in: %w", err)
	}
	return end, size - end, nil
}

// countingWriter writes to the log's file and counts what reached it, so
// that a line cut short can be cut back (logFile.size).
type countingWriter struct{ lf *logFile }

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.lf.f.Write(p)
	c.lf.size += int64(n)
	return n, err
}

func syncDir(dir string) {
	d, err := os.Open(dir)
	if err != nil {
		return
	}
	_ = d.Sync()
	_ = d.Close()
}

// append writes one line and applies the fsync policy. A line is written
// whole or not at all: when the write or its fsync fails (a full disk), the
// file is cut back to the line before and the chain continues from there,
// so the next append (the disk may have room by then) writes it again.
func (lf *logFile) append(l auditlog.Line) error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.closed {
		return errClosed
	}
	before, tip := lf.size, lf.w.Tip()
	if lf.uncut {
		if err := lf.cutBack(before, tip); err != nil {
			return err
		}
	}
	if lf.rewrite {
		// A batch given up on after its fsync failed (its stream ended):
		// its lines are cut off, and the host sends its results again.
		lf.unsynced, lf.rewrite = nil, false
	}
	if _, err := lf.w.Append(l); err != nil {
		return errors.Join(err, lf.cutBack(before, tip))
	}
	if lf.policy == fsyncAlways {
		if len(lf.unsynced) == 0 {
			lf.syncedSize, lf.syncedTip = before, tip
		}
		lf.unsynced = append(lf.unsynced, l)
	}
	if lf.policy == fsyncInterval {
		lf.dirty = true
	}
	return nil
}

// commit fsyncs the lines written since the last fsync (fsync = always):
// one fsync for every line of a batch, before the batch is acknowledged.
// When the fsync fails, the lines may never reach the disk: they are cut
// off, and the next commit writes them again (same seqs, same hashes)
// before it fsyncs.
func (lf *logFile) commit() error {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if len(lf.unsynced) == 0 {
		return nil
	}
	if lf.closed {
		return errClosed
	}
	if lf.rewrite {
		if err := lf.cutBack(lf.syncedSize, lf.syncedTip); err != nil {
			return err
		}
		for _, l := range lf.unsynced {
			if _, err := lf.w.Append(l); err != nil {
				return errors.Join(err, lf.cutBack(lf.syncedSize, lf.syncedTip))
			}
		}
		lf.rewrite = false
	}
	if err := lf.sync(); err != nil {
		lf.rewrite = true
		first := lf.syncedTip.Seq + 1
		return errors.Join(fmt.Errorf("audit log: fsync of lines %d to %d: %w", first, first+uint64(len(lf.unsynced))-1, err),
			lf.cutBack(lf.syncedSize, lf.syncedTip))
	}
	lf.unsynced = nil
	return nil
}

// dropUnsynced forgets the lines a failed commit cut off, when their
// batch is given up on: the host sends those results again.
func (lf *logFile) dropUnsynced() {
	lf.mu.Lock()
	defer lf.mu.Unlock()
	if lf.rewrite {
		lf.unsynced, lf.rewrite = nil, false
	}
}

// cutBack truncates the file to size, the end of the line whose chain tip
// is tip, and continues the chain from there. lf.mu is held.
func (lf *logFile) cutBack(size int64, tip auditlog.Tip) error {
	if err := lf.f.Truncate(size); err != nil {
		lf.uncut = true
		return fmt.Errorf("audit log: cannot cut a failed line back: %w", err)
	}
	lf.uncut = false
	lf.size = size
	lf.w = auditlog.NewWriter(countingWriter{lf}, tip)
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
	signErr := lf.stopSigning()
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
	if signErr != nil {
		errs = append(errs, fmt.Errorf("audit log %s: the last checkpoint: %w", lf.path, signErr))
	}
	syncErr := lf.sync()
	if syncErr != nil {
		errs = append(errs, fmt.Errorf("audit log %s: fsync: %w", lf.path, syncErr))
	}
	lf.mu.Lock()
	lf.lost = len(lf.unsynced) > 0 && (lf.rewrite || syncErr != nil)
	lf.mu.Unlock()
	if err := lf.f.Close(); err != nil {
		errs = append(errs, fmt.Errorf("audit log %s: %w", lf.path, err))
	}
	return errors.Join(errs...)
}
