package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

const usage = `usage: audit verify [--expect-head HASH] FILE

Checks a plugkit audit log: every line, and the hash chain between them.
Prints "ok: N lines intact" and exits 0, or "FILE:LINE: tampered: reason"
for the first bad line and exits 1. Exits 2 when FILE cannot be read.
A log that ends in part of a line (a write cut short) is intact up to it.

--expect-head HASH also checks that the line with that hash is in the log:
a head the audit_head tool published earlier and you kept elsewhere. The
chain alone cannot show a log cut short at a line boundary, or rewritten
and rechained from the start; a missing anchor does (exit 1).

Started by the plugkit host (without arguments), audit is its audit plugin.
`

// run is the command a person runs; main calls it when there are arguments.
// It returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 2 && args[0] == "verify":
		return verify(args[1], "", stdout, stderr)
	case len(args) == 4 && args[0] == "verify" && (args[1] == "--expect-head" || args[1] == "-expect-head"):
		return verify(args[3], args[2], stdout, stderr)
	case len(args) == 4 && args[0] == "verify" && (args[2] == "--expect-head" || args[2] == "-expect-head"):
		return verify(args[1], args[3], stdout, stderr)
	case len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprint(stderr, usage)
	return 2
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
	var te *auditlog.TamperError
	var pe *auditlog.PartialLineError
	partial := ""
	switch {
	case errors.As(err, &te):
		// The verdict goes to stdout like "ok": it is the answer asked
		// for, not a failure to give one.
		fmt.Fprintf(stdout, "%s:%d: tampered: %s\n", path, te.Line, te.Reason)
		return 1
	case errors.As(err, &pe):
		partial = fmt.Sprintf(", then part of a line (%d bytes) that a write cut short, not part of the chain", pe.Bytes)
	case err != nil:
		fmt.Fprintf(stderr, "audit: %s: %v\n", path, err)
		return 2
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
