package deployment

import (
	"strings"
	"testing"
)

// An unquoted value is one error that says to quote it, at its place,
// not "Variables not allowed" per word after an unrelated first error
// about the value being empty.
func TestParseUnquotedValue(t *testing.T) {
	t.Parallel()
	_, diags := Parse(writeDeployment(t, "host {\n  admin_socket = run/host.sock\n  log_level = info\n}\nplugin \"p\" {\n  path = \"bin/ok\"\n  sandbox {\n    read = [corpus]\n  }\n}\n"))
	got := strings.TrimSpace(Format(diags))
	want := []string{
		`deploy.hcl:2:18: Unquoted value: admin_socket = run/host.sock: a deployment file has no variables or references, so a string is written in double quotes: admin_socket = "run/host.sock".`,
		`deploy.hcl:3:15: Unquoted value: log_level = info: a deployment file has no variables or references, so a string is written in double quotes: log_level = "info".`,
		`deploy.hcl:8:12: Unquoted value: read = [corpus]: a deployment file has no variables or references, so a string is written in double quotes: write each string in double quotes.`,
	}
	lines := strings.Split(got, "\n")
	if len(lines) != len(want) {
		t.Fatalf("got %d problems, want %d:\n%s", len(lines), len(want), got)
	}
	for i, w := range want {
		if !strings.HasSuffix(lines[i], w) {
			t.Errorf("problem %d:\n got %s\nwant …%s", i+1, lines[i], w)
		}
	}
}
