package metrics_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plugkit-go/plugkit/egress"
	"github.com/plugkit-go/plugkit/metrics"
)

// TestEgress: connections are counted by plugin and host, bytes by
// direction; every refusal goes under one host label, however many names
// a plugin makes up.
func TestEgress(t *testing.T) {
	m := metrics.New("test", nil, nil)
	m.Egress(egress.Event{Plugin: "gh", Host: "api.github.com", Port: 443, Allowed: true, BytesOut: 100, BytesIn: 2000})
	m.Egress(egress.Event{Plugin: "gh", Host: "api.github.com", Port: 443, Allowed: true, BytesOut: 10})
	for i := range 50 {
		m.Egress(egress.Event{Plugin: "gh", Host: fmt.Sprintf("x%d.evil.example", i), Port: 443})
	}
	want := `
# HELP plugkit_egress_connections_total Outbound connections sandboxed plugins asked their egress proxy for, by plugin, destination host ("(refused)" for every refused one) and outcome (allowed or refused).
# TYPE plugkit_egress_connections_total counter
plugkit_egress_connections_total{host="(refused)",outcome="refused",plugin="gh"} 50
plugkit_egress_connections_total{host="api.github.com",outcome="allowed",plugin="gh"} 2
# HELP plugkit_egress_bytes_total Bytes through plugins' egress proxies, by plugin, destination host and direction (out to the destination, in from it).
# TYPE plugkit_egress_bytes_total counter
plugkit_egress_bytes_total{direction="in",host="api.github.com",plugin="gh"} 2000
plugkit_egress_bytes_total{direction="out",host="api.github.com",plugin="gh"} 110
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "plugkit_egress_connections_total", "plugkit_egress_bytes_total"); err != nil {
		t.Error(err)
	}
}
