package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// TestCaseFromAudit: a case with from_audit and seq makes the call of that
// audit line (tool, recorded arguments, principal); each mistake is
// reported at the case.
func TestCaseFromAudit(t *testing.T) {
	dir := t.TempDir()
	var text strings.Builder
	prev := auditlog.ZeroHash
	for i, l := range []auditlog.Line{
		{Tool: "list_dir", Principal: "ann", PrincipalKind: "user", OK: true, Arguments: []byte(`{"path":"."}`)},
		{Tool: "read_file", Principal: "bob", PrincipalKind: "user", Code: "DENIED", DecidedBy: "safety"},
	} {
		l.Seq, l.Time, l.ID, l.Caller, l.ArgsSHA256 = uint64(i+1), time.Unix(0, 0), "c", "cli", auditlog.Digest(l.Arguments)
		l.Seal(prev)
		prev = l.Hash
		text.Write(l.Text())
		text.WriteByte('\n')
	}
	if err := os.MkdirAll(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "logs", "audit.log"), []byte(text.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := filepath.Join(dir, "cases.hcl")
	write := func(src string) {
		if err := os.WriteFile(cases, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	write(`case "listing is retired" {
  from_audit = "logs/audit.log"
  seq        = 1
  expect     = "DENIED"
}
`)
	cs, diags := parseCaseFile(cases)
	if diags.HasErrors() {
		t.Fatal(deployment.Format(diags))
	}
	c := cs[0]
	if c.Tool != "list_dir" || string(c.args) != `{"path":"."}` || c.principal == nil || c.principal.String() != "user:ann" {
		t.Fatalf("case %+v args %s principal %v", c, c.args, c.principal)
	}

	for _, tc := range []struct{ body, want string }{
		{`from_audit = "logs/audit.log"
  seq = 2`, "line 2 records no arguments"},
		{`from_audit = "logs/audit.log"
  seq = 9`, "logs/audit.log has no line 9"},
		{`from_audit = "logs/audit.log"`, "from_audit needs seq"},
		{`from_audit = "logs/audit.log"
  seq = 1
  tool = "x"`, "from_audit takes the call from the log"},
		{`from_audit = "logs/none.log"
  seq = 1`, "the log cannot be read"},
		{`tool = "x"
  seq = 1`, "seq without from_audit"},
	} {
		write("case \"c\" {\n  " + tc.body + "\n  expect = \"DENIED\"\n}\n")
		_, diags := parseCaseFile(cases)
		if got := deployment.Format(diags); !strings.Contains(got, tc.want) || !strings.Contains(got, "cases.hcl:1:1") {
			t.Errorf("%s:\n%s\nwant it to say %q at the case", tc.body, got, tc.want)
		}
	}
}
