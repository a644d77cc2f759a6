package auditlog

import (
	"strings"
	"testing"
	"time"
)

// TestApprovalMemberRoundTrips: a line that records an approval is in
// canonical form, parses back to the same line, and changing the approval
// breaks its hash.
func TestApprovalMemberRoundTrips(t *testing.T) {
	l := Line{Seq: 1, Time: time.Date(2026, 5, 4, 10, 20, 30, 0, time.UTC), ID: "c-1", Caller: "mcp#1", Tool: "delete_file", OK: true,
		ArgsSHA256: Digest([]byte(`{}`)), Approval: []byte(`{"id":"apr-1","route":"oncall","state":"approved","decisions":[{"by":"user:ann","approve":true}]}`)}
	l.Seal(ZeroHash)
	text := l.Text()
	if !strings.Contains(string(text), `"approval":{"id":"apr-1"`) {
		t.Fatalf("line without its approval: %s", text)
	}
	got, err := ParseLine(text)
	if err != nil {
		t.Fatal(err)
	}
	if string(got.Approval) != string(l.Approval) || got.Hash != l.Hash {
		t.Fatalf("parsed %+v, want %+v", got, l)
	}
	forged := strings.Replace(string(text), "user:ann", "user:eve", 1)
	p, err := ParseLine([]byte(forged))
	if err != nil {
		t.Fatal(err)
	}
	if Chain(p.Prev, p.Body()) == p.Hash {
		t.Error("a changed approver keeps the line's hash")
	}
}
