package remote

import (
	"testing"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// Receipts are taken only from the plugin receipts_from names or, without
// a name, from a plugin that declares receipts; others are dropped.
func TestReceiptsOnlyFromTheAudit(t *testing.T) {
	for _, tc := range []struct {
		from, plugin string
		declared     bool
		want         bool
	}{
		{"", "audit", true, true},
		{"", "forger", false, false},
		{"audit", "audit", false, true},
		{"audit", "forger", true, false},
	} {
		r := newReceipts(tc.from)
		r.source(1)
		ok := r.add(tc.plugin, tc.declared, []*pb.Receipt{{CallId: "c1", Seq: 7, Hash: "h"}})
		_, got := r.got["c1"]
		if ok != tc.want || got != tc.want {
			t.Errorf("from %q, plugin %q declared %v: accepted %v, kept %v; want %v", tc.from, tc.plugin, tc.declared, ok, got, tc.want)
		}
	}
}
