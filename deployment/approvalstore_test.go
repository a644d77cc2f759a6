package deployment

import (
	"strings"
	"testing"
	"time"
)

// TestParseApprovalStore: approval_lease_ttl defaults to 30s with an
// approval_store and is 0 without one; a bad store, a lease without a
// store or one too short is an error naming the file and line.
func TestParseApprovalStore(t *testing.T) {
	t.Parallel()
	block := func(lines string) string { return "host {\n" + lines + "}\n" }
	const store = "  approval_store = \"redis://127.0.0.1:6379/2\"\n"
	for _, c := range []struct {
		lines, url string
		ttl        time.Duration
	}{
		{"", "", 0},
		{store, "redis://127.0.0.1:6379/2", 30 * time.Second},
		{store + "  approval_lease_ttl = \"5s\"\n", "redis://127.0.0.1:6379/2", 5 * time.Second},
	} {
		h := parseClean(t, block(c.lines)).Host
		if h.ApprovalStore != c.url || h.ApprovalLeaseTTL != c.ttl {
			t.Errorf("%q: approval_store %q, approval_lease_ttl %s", c.lines, h.ApprovalStore, h.ApprovalLeaseTTL)
		}
	}
	for _, c := range []struct{ lines, want string }{
		{"  approval_store = \"http://redis:6379\"\n", "deploy.hcl:2:20: Invalid approval_store"},
		{"  approval_lease_ttl = \"45s\"\n", "deploy.hcl:2:24: approval_lease_ttl without a store"},
		{store + "  approval_lease_ttl = \"500ms\"\n", "deploy.hcl:3:24: Invalid approval_lease_ttl: approval_lease_ttl = \"500ms\" is less than 1s"},
		{store + "  approval_lease_ttl = \"soon\"\n", "deploy.hcl:3:24: Invalid duration"},
	} {
		_, diags := Parse(writeDeployment(t, block(c.lines)))
		if out := Format(diags); !strings.Contains(out, c.want) {
			t.Errorf("%q\ndiagnostics:\n%s\nwant %q", c.lines, out, c.want)
		}
	}
}
