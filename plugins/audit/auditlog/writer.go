package auditlog

import (
	"fmt"
	"io"
	"sync"
)

// Tip is where a log's chain ends: the last line's seq and hash. The zero
// Tip is invalid; an empty log's tip is Genesis.
type Tip struct {
	// Seq is the last line's seq, also the number of lines; 0 when empty.
	Seq uint64
	// Hash is the last line's hash; ZeroHash when empty.
	Hash string
}

// Genesis is the tip of an empty log.
var Genesis = Tip{Seq: 0, Hash: ZeroHash}

// Writer appends chained lines to a log. It is safe for concurrent use:
// Append calls are serialised, each line is one Write.
type Writer struct {
	mu  sync.Mutex
	w   io.Writer
	tip Tip
	buf []byte
	err error
}

// NewWriter appends to w, continuing the chain after tip: Genesis for a new
// log, or ReadTip of an existing one.
func NewWriter(w io.Writer, tip Tip) *Writer {
	if tip == (Tip{}) {
		tip = Genesis // the zero Tip would chain to prev "", never valid
	}
	return &Writer{w: w, tip: tip}
}

// Append sets l's Seq, Prev and Hash to follow the current tip, writes it as
// one line and returns it as written.
//
// After a failed write the log may hold part of a line, so every later
// Append fails with the same error rather than chain to a line the file
// does not have; reopening the log (ReadTip) tells whether it is intact.
func (w *Writer) Append(l Line) (Line, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return Line{}, w.err
	}
	l.Seq = w.tip.Seq + 1
	l.Time = l.Time.UTC()
	l.Seal(w.tip.Hash)
	w.buf = append(l.appendLine(w.buf[:0]), '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("audit log: writing line %d: %w", l.Seq, err)
		return Line{}, w.err
	}
	w.tip = Tip{Seq: l.Seq, Hash: l.Hash}
	return l, nil
}

// Tip is the chain's end after the last successful Append.
func (w *Writer) Tip() Tip {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.tip
}
