package auditlog

import (
	"bufio"
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
)

// SignedReport is what VerifySigned found in an intact log.
type SignedReport struct {
	// Tip is the chain's end: its seq is the number of call lines.
	Tip Tip
	// Signed is the last tip a checkpoint by a trusted key signed; Genesis
	// when none did. The lines after it are not signed yet: the plugin signs
	// within sign_every of writing them, so only the last moments of a log
	// still being written (or one whose writer was killed) are unsigned.
	Signed Tip
	// Checkpoints counts the checkpoints whose signatures verified.
	Checkpoints int
	// Unchecked counts checkpoints by keys the keyring did not know, before
	// the first trusted one (see Keyring).
	Unchecked int
	// Rotations counts the trusted checkpoints that introduced a new key.
	Rotations int
	// KeyID is the key that signs after the last rotation.
	KeyID string
}

// VerifySigned verifies a whole log as Verify does and every checkpoint's
// signature, trusting pub (and the keys its rotations introduce). The error
// is a *TamperError for a bad line, a bad or untrusted signature, or a
// checkpoint that does not match the chain: a chain rewritten from some line
// on, even with fresh hashes, no longer matches the checkpoints after that
// line, and new ones cannot be made without the private key.
func VerifySigned(r io.Reader, pub ed25519.PublicKey) (SignedReport, error) {
	kr := NewKeyring(pub)
	rep := SignedReport{Signed: Genesis}
	tip, err := readLog(r, func(Line) {}, func(c Checkpoint) error {
		signed, err := kr.Check(c)
		switch {
		case err != nil:
			return err
		case !signed:
			rep.Unchecked++
			return nil
		}
		rep.Checkpoints++
		if c.NextKey != "" {
			rep.Rotations++
		}
		rep.Signed = Tip{Seq: c.Seq, Hash: c.Hash}
		return nil
	})
	rep.Tip = tip
	rep.KeyID = kr.CurrentID()
	return rep, err
}

// ErrNotSigned says no checkpoint follows the line to prove yet.
var ErrNotSigned = errors.New("no checkpoint signs it yet")

// errStop ends a read early, without error.
var errStop = errors.New("stop reading")

// Prove reads the log r and writes to w the proof that its line seq is in
// it: every rotation checkpoint before the first checkpoint at or after that
// line, the call lines from that line to that checkpoint, and the
// checkpoint; each as it stands in the log, one a line. VerifyProof checks
// it with nothing but a public key. The log is verified up to that
// checkpoint on the way.
func Prove(r io.Reader, seq uint64, w io.Writer) error {
	if seq == 0 {
		return errors.New("seq starts at 1")
	}
	var rotations, chain [][]byte
	var covering *Checkpoint
	tip, err := readLog(r, func(l Line) {
		if l.Seq >= seq {
			chain = append(chain, l.Text())
		}
	}, func(c Checkpoint) error {
		if c.Seq >= seq && c.Seq > 0 {
			covering = &c
			return errStop
		}
		if c.NextKey != "" {
			rotations = append(rotations, c.Text())
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return err
	}
	if covering == nil {
		if tip.Seq < seq {
			return fmt.Errorf("the log has no line %d: it has %d lines", seq, tip.Seq)
		}
		return fmt.Errorf("line %d: %w (the audit plugin signs within sign_every of a write, and when it stops)", seq, ErrNotSigned)
	}
	bw := bufio.NewWriter(w)
	for _, b := range append(append(rotations, chain...), covering.Text()) {
		bw.Write(b)
		bw.WriteByte('\n')
	}
	return bw.Flush()
}

// ProofReport is what VerifyProof found.
type ProofReport struct {
	// Line is the proven line (its seq and hash).
	Line Tip
	// Signed is the checkpoint's tip, KeyID the key that signed it.
	Signed Tip
	KeyID  string
}

// VerifyProof checks a proof Prove wrote, trusting pub: the rotations lead
// from pub to the key that signed the checkpoint, the call lines chain one
// to the next, and the checkpoint signs the last of them. Then the first
// line, whose hash a receipt names, is in the log as that key signed it.
func VerifyProof(r io.Reader, pub ed25519.PublicKey) (ProofReport, error) {
	kr := NewKeyring(pub)
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<30)
	var (
		rep    ProofReport
		tip    Tip
		lines  int
		signed bool
	)
	for n := 1; sc.Scan(); n++ {
		text := sc.Bytes()
		bad := func(format string, a ...any) error {
			return fmt.Errorf("proof line %d: %s", n, fmt.Sprintf(format, a...))
		}
		if signed {
			return rep, bad("more after the checkpoint that ends the proof")
		}
		if IsCheckpoint(text) {
			c, err := ParseCheckpoint(text)
			if err != nil {
				return rep, bad("%v", err)
			}
			if lines > 0 && (c.Seq != tip.Seq || c.Hash != tip.Hash) {
				return rep, bad("the checkpoint signs seq %d, not the last line's (seq %d, hash %s)", c.Seq, tip.Seq, tip.Hash)
			}
			if lines == 0 && c.NextKey == "" {
				return rep, bad("a checkpoint before the line to prove that is not a rotation")
			}
			ok, err := kr.Check(c)
			if err != nil {
				return rep, bad("%v", err)
			}
			if lines > 0 {
				if !ok {
					return rep, bad("the checkpoint is signed by key %s, not by the trusted key (%s) or one its rotations introduced", c.KeyID, kr.CurrentID())
				}
				rep.Signed, rep.KeyID, signed = Tip{Seq: c.Seq, Hash: c.Hash}, c.KeyID, true
			}
			continue
		}
		l, err := ParseLine(text)
		if err != nil {
			return rep, bad("%v", err)
		}
		if lines == 0 {
			// Nothing before the first line: its prev is taken as given,
			// and its own hash still has to match.
			tip = Tip{Seq: l.Seq - 1, Hash: l.Prev}
			rep.Line = Tip{Seq: l.Seq, Hash: l.Hash}
		}
		if reason := follows(l, tip); reason != "" {
			return rep, bad("%s", reason)
		}
		tip = Tip{Seq: l.Seq, Hash: l.Hash}
		lines++
	}
	if err := sc.Err(); err != nil {
		return rep, fmt.Errorf("reading the proof: %w", err)
	}
	if lines == 0 {
		return rep, errors.New("the proof holds no line of the log")
	}
	if !signed {
		return rep, errors.New("the proof does not end in a checkpoint")
	}
	return rep, nil
}

// ReadTailSigned is ReadTail that also returns the log's last checkpoint,
// nil when it has none: a writer that signs goes on from there.
func ReadTailSigned(r io.Reader, n int) (Tip, []string, *Checkpoint, error) {
	ring := idRing{size: max(n, 0)}
	var last *Checkpoint
	tip, err := readLog(r, func(l Line) { ring.add(l.ID) }, func(c Checkpoint) error {
		last = &c
		return nil
	})
	return tip, ring.list(), last, err
}
