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

// Verify reads a whole log and checks every line and the chain between
// them. It returns the number of lines that are intact before the first bad
// one; the error is a *TamperError for a bad line, any other error for a
// failure to read.
func Verify(r io.Reader) (lines int, err error) {
	tip, err := ReadTip(r)
	return int(tip.Seq), err
}

// ReadTip verifies a whole log as Verify does and returns the tip of its
// chain, for a Writer to continue it. On error the tip is that of the last
// intact line.
func ReadTip(r io.Reader) (Tip, error) {
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
		terminated := text[len(text)-1] == '\n'
		if terminated {
			text = text[:len(text)-1]
		}
		l, perr := ParseLine(text)
		if perr != nil {
			return tip, &TamperError{Line: n, Reason: perr.Error()}
		}
		if reason := follows(l, tip); reason != "" {
			return tip, &TamperError{Line: n, Reason: reason}
		}
		if !terminated {
			// Intact but cut before its newline: a write cut short, or a
			// newline removed. Appending would glue the next line onto it.
			return tip, &TamperError{Line: n, Reason: "no newline at the end of the line (a write cut short?)"}
		}
		tip = Tip{Seq: l.Seq, Hash: l.Hash}
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
