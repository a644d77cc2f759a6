package main

import (
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/shared/secrets"
)

// scanner finds the credentials that record_arguments = "redacted" keeps
// out of the log: the scanner the safety plugin and the CLI use.
var scanner = secrets.New(nil)

// recorded is a call's arguments as the line records them: as they are,
// or, with redaction, each credential in their strings replaced by the
// scanner's marker. Arguments the scanner cannot read (not JSON) are
// recorded as a marker saying so rather than as they are: what might
// hold a credential is not written.
func (a *auditor) recorded(args []byte) []byte {
	if !a.redact {
		return auditlog.ArgumentsJSON(args)
	}
	if len(args) == 0 {
		return auditlog.ArgumentsJSON(args)
	}
	out, _, err := scanner.RedactJSON(args)
	if err != nil {
		return auditlog.ArgumentsJSON([]byte("[arguments not recorded: not JSON the secrets scanner reads]"))
	}
	return auditlog.ArgumentsJSON(out)
}
