package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plugkit-go/plugkit/egress"
)

// egressMetrics count the connections sandboxed plugins asked their egress
// proxies for, by destination host. A refused connection's host is any
// name the plugin makes up, so refusals are counted under host "(refused)":
// a hostile plugin cannot grow the series without bound (the audit and
// host status name each one).
type egressMetrics struct {
	conns *prometheus.CounterVec
	bytes *prometheus.CounterVec
}

func newEgress() egressMetrics {
	return egressMetrics{
		conns: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "egress_connections_total",
			Help: "Outbound connections sandboxed plugins asked their egress proxy for, by plugin, destination host (\"(refused)\" for every refused one) and outcome (allowed or refused).",
		}, []string{"plugin", "host", "outcome"}),
		bytes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "egress_bytes_total",
			Help: "Bytes through plugins' egress proxies, by plugin, destination host and direction (out to the destination, in from it).",
		}, []string{"plugin", "host", "direction"}),
	}
}

// Egress counts one connection through (or refused by) a plugin's egress
// proxy.
func (m *Metrics) Egress(ev egress.Event) {
	if !ev.Allowed {
		m.egress.conns.WithLabelValues(ev.Plugin, "(refused)", "refused").Inc()
		return
	}
	m.egress.conns.WithLabelValues(ev.Plugin, ev.Host, "allowed").Inc()
	if ev.BytesOut > 0 {
		m.egress.bytes.WithLabelValues(ev.Plugin, ev.Host, "out").Add(float64(ev.BytesOut))
	}
	if ev.BytesIn > 0 {
		m.egress.bytes.WithLabelValues(ev.Plugin, ev.Host, "in").Add(float64(ev.BytesIn))
	}
}
