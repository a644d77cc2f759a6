package auditlog

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// TamperError points at the first line of a log that is not intact.
type TamperError struct {
	// Line is the 1-based line number in the file.
	Line int
	// Reason says what is wrong with it.
	Reason string
}

func (e *TamperError) Error() string {
	return fmt.Sprintf("line %d: tampered: %s", e.Line, e.Reason)
}

// idRing keeps the last size ids added.
type idRing struct {
	size int
	ids  []string
	next int // where the next id goes once ids is full
}

func (r *idRing) add(id string) {
	switch {
	case r.size == 0:
	case len(r.ids) < r.size:
		r.ids = append(r.ids, id)
	default:
		r.ids[r.next] = id
		r.next = (r.next + 1) % r.size
	}
}

func (r *idRing) list() []string {
	out := make([]string, 0, len(r.ids))
	out = append(out, r.ids[r.next:]...)
	return append(out, r.ids[:r.next]...)
}

// readTipFunc verifies the log r and calls each for every intact line.
func readTipFunc(r io.Reader, each func(Line)) (Tip, error) {
	return readLog(r, each, nil)
}

// readLog verifies the log r and calls each for every intact call line and
// checkpoint (when not nil) for every checkpoint; an error checkpoint
// returns is reported as tampering at that line.
//
// A checkpoint must stand right after the line it signs: its seq and hash
// are the chain's tip at its place. That is checked here, without a key, so
// that a checkpoint moved, copied or changed reads as tampering; its
// signature is checkpoint's to check.
func readLog(r io.Reader, each func(Line), checkpoint func(Checkpoint) error) (Tip, error) {
	br := bufio.NewReader(r)
	tip := Genesis
	for n := 1; ; n++ {
		// ReadSlice would cap a line at the buffer's 4 KiB; a line
		// with recorded arguments can be as large as a message.
		text, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return tip, fmt.Errorf("audit log: reading line %d: %w", n, err)
		}
		if len(text) == 0 {
			return tip, nil // the end, right after a newline (or an empty log)
		}
		if text[len(text)-1] != '\n' {
			// Whatever it holds, it was never a whole line of the chain.
			return tip, &PartialLineError{Line: n, Bytes: len(text)}
		}
		text = text[:len(text)-1]
		if IsCheckpoint(text) {
			c, perr := ParseCheckpoint(text)
			if perr != nil {
				return tip, &TamperError{Line: n, Reason: perr.Error()}
			}
			if c.Seq != tip.Seq || c.Hash != tip.Hash {
				return tip, &TamperError{Line: n, Reason: fmt.Sprintf(
					"checkpoint of seq %d does not match the chain before it (seq %d): the chain was changed, or the checkpoint moved", c.Seq, tip.Seq)}
			}
			if checkpoint != nil {
				if err := checkpoint(c); errors.Is(err, errStop) {
					return tip, err
				} else if err != nil {
					return tip, &TamperError{Line: n, Reason: err.Error()}
				}
			}
			continue
		}
		l, perr := ParseLine(text)
		if perr != nil {
			return tip, &TamperError{Line: n, Reason: perr.Error()}
		}
		if reason := follows(l, tip); reason != "" {
			return tip, &TamperError{Line: n, Reason: reason}
		}
		tip = Tip{Seq: l.Seq, Hash: l.Hash}
		each(l)
	}
}

// follows checks l against the chain so far: seq, then prev, then its own
// hash. The order makes a moved or missing line read as such rather than as
// a changed one.
func follows(l Line, tip Tip) string {
	if l.Seq != tip.Seq+1 {
		return fmt.Sprintf("seq is %d, want %d (a line is missing, added or out of order)", l.Seq, tip.Seq+1)
	}
	if l.Prev != tip.Hash {
		if tip.Seq == 0 {
			return "prev is not 64 zeros, as the first line's must be"
		}
		return "prev does not match the hash of the line before"
	}
	if want := Chain(l.Prev, l.Body()); l.Hash != want {
		return "hash does not match the line's content"
	}
	return ""
}

var _ error = (*TamperError)(nil)

// PartialLineError says a log ends in part of a line: what a write cut
// short by a full disk or a crash leaves. It is not a line of the chain,
// and the lines before it are intact; the audit plugin removes it when it
// next opens the log.
type PartialLineError struct {
	// Line is the 1-based line number the part would have been.
	Line int
	// Bytes is the part's length.
	Bytes int
}

func (e *PartialLineError) Error() string {
	return fmt.Sprintf("line %d: part of a line (%d bytes, no newline), left by a write cut short", e.Line, e.Bytes)
}

// VerifyAnchor verifies a whole log, every line and the chain between
// them (the error is a *TamperError for a bad line, any other error for a
// failure to read), and returns the number of intact lines before the
// first bad one. It also reports at
// which line (its seq) the line whose hash is anchor stands, 0 when no line
// has it. An anchor is a head published earlier and kept elsewhere: a log
// that lost it was cut short before it, or rewritten up to it, which the
// chain alone cannot show.
func VerifyAnchor(r io.Reader, anchor string) (lines int, at int, err error) {
	tip, err := readTipFunc(r, func(l Line) {
		if at == 0 && l.Hash == anchor {
			at = int(l.Seq)
		}
	})
	return int(tip.Seq), at, err
}
