package sdk

import (
	"testing"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// AskVia names the route, and the route crosses the wire with the ask.
func TestAskVia(t *testing.T) {
	d := AskVia("oncall", "deploy?")
	if d.Verdict != wire.VerdictAsk || d.Reason != "deploy?" || d.Route != "oncall" {
		t.Fatalf("AskVia = %+v", d)
	}
	if got := wire.DecisionFromProto(wire.DecisionToProto(d)); got != d {
		t.Errorf("through the wire: %+v, want %+v", got, d)
	}
}
