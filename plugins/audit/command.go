package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

const usage = `usage: audit verify [--expect-head HASH] [--key PUBKEY] FILE
       audit keygen KEYFILE
       audit prove SEQ FILE
       audit verify-proof --key PUBKEY [--hash HASH] PROOF

verify checks a plugkit audit log: every line, and the hash chain between
them. Prints "ok: N lines intact" and exits 0, or "FILE:LINE: tampered:
reason" for the first bad line and exits 1. Exits 2 when FILE cannot be
read. A log that ends in part of a line (a write cut short) is intact up to
it.

--expect-head HASH also checks that the line with that hash is in the log:
a head the audit_head tool published earlier and you kept elsewhere. The
chain alone cannot show a log cut short at a line boundary, or rewritten
and rechained from the start; a missing anchor does (exit 1).

--key PUBKEY also checks every checkpoint's signature, trusting that public
key and the keys its rotations introduce, and prints the last signed seq.
A chain rewritten without the private key no longer matches its
checkpoints (exit 1), and so does a log whose checkpoints are all by other
keys. Lines after the last checkpoint are reported as not yet signed, which
is not tampering: the plugin signs within sign_every; a log with lines and
no checkpoint at all exits 3.

keygen writes a new Ed25519 private key to KEYFILE (0600; it refuses to
overwrite one; it makes KEYFILE's folder, 0700, when missing) and its
public key to KEYFILE.pub, and prints the public key.

prove prints the proof that line SEQ is in the log: the lines from it to
the next checkpoint, that checkpoint, and the rotations before it; it
exits 3 while no checkpoint follows that line yet.
verify-proof checks such a proof with nothing but the public key; --hash
also checks that the proven line is the one a receipt names.

Started by the plugkit host (without arguments), audit is its audit plugin.
`

// run is the command a person runs; main calls it when there are arguments.
// It returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
		fmt.Fprint(stdout, usage)
		return 0
	}
	if len(args) > 0 {
		if cmd, ok := commands[args[0]]; ok {
			return cmd(args[1:], stdout, stderr)
		}
	}
	fmt.Fprint(stderr, usage)
	return 2
}

// commands are the subcommands by name; each gets the arguments after it.
var commands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"verify":       verifyCommand,
	"keygen":       keygenCommand,
	"prove":        proveCommand,
	"verify-proof": verifyProofCommand,
}

// parseArgs splits args into the values of the flags named in flags
// (written --name VALUE, -name VALUE or --name=VALUE, anywhere) and the
// positional arguments, of which there must be want.
func parseArgs(args []string, flags map[string]*string, want int) ([]string, error) {
	var pos []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") || a == "-" {
			pos = append(pos, a)
			continue
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		p, ok := flags[name]
		if !ok {
			return nil, fmt.Errorf("unknown flag %s", a)
		}
		if !hasValue {
			if i+1 == len(args) {
				return nil, fmt.Errorf("flag %s needs a value", a)
			}
			i++
			value = args[i]
		}
		*p = value
	}
	if len(pos) != want {
		return nil, fmt.Errorf("want %d argument(s), got %d", want, len(pos))
	}
	return pos, nil
}

func usageError(stderr io.Writer, err error) int {
	fmt.Fprintf(stderr, "audit: %v\n\n%s", err, usage)
	return 2
}

func verifyCommand(args []string, stdout, stderr io.Writer) int {
	var anchor, key string
	pos, err := parseArgs(args, map[string]*string{"expect-head": &anchor, "key": &key}, 1)
	if err != nil {
		return usageError(stderr, err)
	}
	if key != "" {
		pub, err := auditlog.ReadPublicKey(key)
		if err != nil {
			fmt.Fprintf(stderr, "audit: %v\n", err)
			return 2
		}
		return verifySigned(pos[0], anchor, pub, stdout, stderr)
	}
	return verify(pos[0], anchor, stdout, stderr)
}

// verify checks the log at path and, when anchor is set, that the line
// with that hash is in it.
func verify(path, anchor string, stdout, stderr io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return 2
	}
	defer f.Close()
	n, at, err := auditlog.VerifyAnchor(f, anchor)
	partial, status := verdict(path, err, stdout, stderr)
	if status >= 0 {
		return status
	}
	if anchor != "" && at == 0 {
		fmt.Fprintf(stdout, "%s: the expected head %s is not in the log (%d lines intact): "+
			"it was cut short before that line, or rewritten\n", path, anchor, n)
		return 1
	}
	fmt.Fprintf(stdout, "ok: %d lines intact%s\n", n, partial)
	if anchor != "" {
		fmt.Fprintf(stdout, "expected head found at line %d\n", at)
	}
	return 0
}

// verdict reports a verification's error: status is the exit status when
// the verification is over (tampered, unreadable), -1 when the log is
// intact, then partial describes a partial last line, if any.
func verdict(path string, err error, stdout, stderr io.Writer) (partial string, status int) {
	var te *auditlog.TamperError
	var pe *auditlog.PartialLineError
	switch {
	case errors.As(err, &te):
		// The verdict goes to stdout like "ok": it is the answer asked
		// for, not a failure to give one.
		fmt.Fprintf(stdout, "%s:%d: tampered: %s\n", path, te.Line, te.Reason)
		return "", 1
	case errors.As(err, &pe):
		return fmt.Sprintf(", then part of a line (%d bytes) that a write cut short, not part of the chain", pe.Bytes), -1
	case err != nil:
		fmt.Fprintf(stderr, "audit: %s: %v\n", path, err)
		return "", 2
	}
	return "", -1
}

// verifySigned is verify with checkpoints' signatures checked against pub.
func verifySigned(path, anchor string, pub ed25519.PublicKey, stdout, stderr io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return 2
	}
	defer f.Close()
	rep, err := auditlog.VerifySigned(f, pub)
	partial, status := verdict(path, err, stdout, stderr)
	if status >= 0 {
		return status
	}
	if anchor != "" {
		// A second read: VerifyAnchor is the one place that knows anchors.
		if _, err := f.Seek(0, io.SeekStart); err != nil {
			fmt.Fprintf(stderr, "audit: %s: %v\n", path, err)
			return 2
		}
		if _, at, _ := auditlog.VerifyAnchor(f, anchor); at == 0 {
			fmt.Fprintf(stdout, "%s: the expected head %s is not in the log (%d lines intact): "+
				"it was cut short before that line, or rewritten\n", path, anchor, rep.Tip.Seq)
			return 1
		}
	}
	if rep.Checkpoints == 0 && rep.Unchecked > 0 {
		// Every checkpoint is another key's: the log may be whole, but
		// not signed by the key asked about (re-signed by someone else, or
		// the wrong public key).
		fmt.Fprintf(stdout, "%s: no checkpoint is signed by key %s: all %d are by other keys "+
			"(a log re-signed by another key, or the wrong public key)\n", path, rep.KeyID, rep.Unchecked)
		return 1
	}
	if rep.Checkpoints == 0 && rep.Tip.Seq > 0 {
		fmt.Fprintf(stdout, "%s: no checkpoint signs any of its %d lines: not signed yet "+
			"(an audit plugin without a key, or one stopped before its first checkpoint)\n", path, rep.Tip.Seq)
		return 3
	}
	fmt.Fprintf(stdout, "ok: %d lines intact%s\n", rep.Tip.Seq, partial)
	fmt.Fprintf(stdout, "signed: up to seq %d (hash %s), %d checkpoints verified", rep.Signed.Seq, rep.Signed.Hash, rep.Checkpoints)
	if rep.Rotations > 0 {
		fmt.Fprintf(stdout, ", %d key rotations", rep.Rotations)
	}
	fmt.Fprintf(stdout, "; signing key now %s\n", rep.KeyID)
	if rep.Unchecked > 0 {
		fmt.Fprintf(stdout, "%d checkpoints before the first by this key were by other keys, not checked "+
			"(verify with an older key to check them)\n", rep.Unchecked)
	}
	if rep.Tip.Seq > rep.Signed.Seq {
		fmt.Fprintf(stdout, "not yet signed: lines %d to %d (written after the last checkpoint)\n", rep.Signed.Seq+1, rep.Tip.Seq)
	}
	return 0
}
