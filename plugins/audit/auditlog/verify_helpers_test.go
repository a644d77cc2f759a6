package auditlog

import "io"

// The verifications the tests read a log with; the host's commands use
// VerifyAnchor, VerifySigned and ReadTailSigned.

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
	tip, _, err := ReadTail(r, 0)
	return tip, err
}

// ReadTail is ReadTip that also returns the ids of the log's last n lines,
// oldest first (all of them when it has fewer), empty ids included: a
// writer that may be handed a call again skips one it finds there. It reads
// the log once, as the verification must anyway. On error the ids are those
// of the last intact lines.
func ReadTail(r io.Reader, n int) (Tip, []string, error) {
	ring := idRing{size: max(n, 0)}
	tip, err := readTip(r, &ring)
	return tip, ring.list(), err
}

func readTip(r io.Reader, ids *idRing) (Tip, error) {
	return readTipFunc(r, func(l Line) { ids.add(l.ID) })
}
