package main

import (
	"fmt"
	"path/filepath"

	"github.com/plugkit-go/plugkit/pipeline"
)

// A case may take its call from an audit log: from_audit names the log
// (relative to the case file) and seq the line, whose tool, recorded
// arguments and principal become the case's, so that a call replay found
// changed becomes a test. The log must record arguments (the audit's
// record_arguments).

// auditCache keeps the logs a case file's cases read, by path.
type auditCache map[string][]recordedCall

// fromAudit fills c's call from line c.Seq of the log c.FromAudit. It
// returns what is wrong, for the case's diagnostic.
func (cache auditCache) fromAudit(c *testCase) (summary, detail string) {
	if c.Tool != "" || c.args != nil {
		return "from_audit takes the call from the log", "leave out tool and arguments"
	}
	if c.Seq <= 0 {
		return "from_audit needs seq", "seq = N names the log's line (its seq) whose call the case makes"
	}
	path := c.FromAudit
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(c.file), path)
	}
	calls, ok := cache[path]
	if !ok {
		var err error
		if calls, err = readAuditCalls(path); err != nil {
			return "from_audit: the log cannot be read", err.Error()
		}
		cache[path] = calls
	}
	for _, rc := range calls {
		l := rc.Line
		if l.Seq != uint64(c.Seq) {
			continue
		}
		if l.Arguments == nil {
			return fmt.Sprintf("from_audit: line %d records no arguments", c.Seq), `the audit records them with record_arguments = "redacted" (or true)`
		}
		c.Tool, c.args = l.Tool, []byte(l.Arguments)
		if c.principal == nil && (l.Principal != "" || l.PrincipalKind != "") {
			c.principal = &pipeline.Principal{ID: l.Principal, Kind: l.PrincipalKind, Attributes: l.PrincipalAttributes}
		}
		return "", ""
	}
	return fmt.Sprintf("from_audit: %s has no line %d", c.FromAudit, c.Seq), ""
}
