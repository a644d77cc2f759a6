package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

const usage = `usage: audit verify FILE

Checks a plugkit audit log: every line, and the hash chain between them.
Prints "ok: N lines intact" and exits 0, or "FILE:LINE: tampered: reason"
for the first bad line and exits 1. Exits 2 when FILE cannot be read.

Without arguments, audit is a plugin for the plugkit host to start.
`

// run is the command a person runs; main calls it when there are arguments.
// It returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	switch {
	case len(args) == 2 && args[0] == "verify":
		return verify(args[1], stdout, stderr)
	case len(args) == 1 && (args[0] == "help" || args[0] == "-h" || args[0] == "-help" || args[0] == "--help"):
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprint(stderr, usage)
	return 2
}

func verify(path string, stdout, stderr io.Writer) int {
	f, err := os.Open(path)
	if err != nil {
		fmt.Fprintf(stderr, "audit: %v\n", err)
		return 2
	}
	defer f.Close()
	n, err := auditlog.Verify(f)
	var te *auditlog.TamperError
	switch {
	case errors.As(err, &te):
		// The verdict goes to stdout like "ok": it is the answer asked
		// for, not a failure to give one.
		fmt.Fprintf(stdout, "%s:%d: tampered: %s\n", path, te.Line, te.Reason)
		return 1
	case err != nil:
		fmt.Fprintf(stderr, "audit: %s: %v\n", path, err)
		return 2
	}
	fmt.Fprintf(stdout, "ok: %d lines intact\n", n)
	return 0
}
