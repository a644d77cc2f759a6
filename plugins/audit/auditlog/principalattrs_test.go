package auditlog

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestPrincipalAttributesMember: the member goes last before prev, inside
// the hash, round-trips, says "none" with [] and is absent on an old line.
func TestPrincipalAttributesMember(t *testing.T) {
	l := Line{Seq: 1, Time: time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC), ID: "c-1", Caller: "mcp", Principal: "ann", PrincipalKind: "agent",
		Tool: "list_dir", OK: true, ArgsSHA256: Digest(nil), Elicitations: []byte(`[{"mode":"form","action":"accept"}]`),
		PrincipalAttributes: []string{"group:canary", `team:"a\b"`}}
	l.Seal(ZeroHash)
	text := l.Text()
	want := `,"elicitations":[{"mode":"form","action":"accept"}],"principal_attributes":["group:canary","team:\"a\\b\""],"prev":`
	if !bytes.Contains(text, []byte(want)) {
		t.Fatalf("line %s\nlacks %s", text, want)
	}
	back, err := ParseLine(text)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.PrincipalAttributes, l.PrincipalAttributes) || back.Hash != l.Hash {
		t.Fatalf("parsed %q", back.PrincipalAttributes)
	}
	changed := l
	changed.PrincipalAttributes = []string{"group:canary"}
	if changed.Seal(ZeroHash); changed.Hash == l.Hash {
		t.Fatal("the hash does not cover principal_attributes")
	}

	// None recorded is [], and parses back as an empty (not nil) list.
	none := l
	none.PrincipalAttributes = []string{}
	none.Seal(ZeroHash)
	if !bytes.Contains(none.Text(), []byte(`,"principal_attributes":[],"prev":`)) {
		t.Fatalf("no attributes: %s", none.Text())
	}
	back, err = ParseLine(none.Text())
	if err != nil || back.PrincipalAttributes == nil || len(back.PrincipalAttributes) != 0 {
		t.Fatalf("parsed %#v, %v", back.PrincipalAttributes, err)
	}

	// A line written before the member: absent, nil when parsed.
	old := l
	old.PrincipalAttributes = nil
	old.Seal(ZeroHash)
	if bytes.Contains(old.Text(), []byte("principal_attributes")) {
		t.Fatalf("old line: %s", old.Text())
	}
	if back, err := ParseLine(old.Text()); err != nil || back.PrincipalAttributes != nil {
		t.Fatalf("old line parsed %#v, %v", back.PrincipalAttributes, err)
	}

	// One spelling only.
	for _, bad := range []string{
		strings.Replace(string(none.Text()), `"principal_attributes":[]`, `"principal_attributes":null`, 1),
		strings.Replace(string(text), `["group:canary",`, `["group:canary", `, 1),
	} {
		if _, err := ParseLine([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}
