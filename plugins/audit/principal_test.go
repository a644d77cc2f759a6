package main

import (
	"context"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// TestRecordsPrincipalAttributes: a call for a principal records its
// attributes ([] when it has none), a call for nobody records none, and
// the log verifies.
func TestRecordsPrincipalAttributes(t *testing.T) {
	s := logSettings(t)
	h := newHarness()
	h.mustStart(t, s)
	for i, p := range []wire.Principal{
		{ID: "ann", Kind: "agent", Attributes: []string{"group:canary", "scope:files.read"}},
		{ID: "bob", Kind: "agent"},
		{},
	} {
		call := &sdk.Call{Execution: sdk.Execution{ID: "c" + string(rune('0'+i)), Name: "list_dir", Caller: "mcp", Principal: p, Arguments: []byte(`{}`)}}
		h.observeWithReceipt(context.Background(), call, sdk.ToolResult{OK: true})
	}
	h.mustStop(t)
	data, err := os.ReadFile(s.path)
	if err != nil {
		t.Fatal(err)
	}
	var got [][]string
	for _, text := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		l, err := auditlog.ParseLine([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, l.PrincipalAttributes)
	}
	if want := [][]string{{"group:canary", "scope:files.read"}, {}, nil}; !reflect.DeepEqual(got, want) {
		t.Fatalf("principal_attributes = %#v, want %#v", got, want)
	}
	if _, _, err := auditlog.VerifyAnchor(strings.NewReader(string(data)), ""); err != nil {
		t.Fatalf("verify: %v", err)
	}
}
