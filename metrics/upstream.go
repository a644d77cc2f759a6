package metrics

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/plugkit-go/plugkit/tokenexchange"
)

func newUpstreamTokens() *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "plugkit", Name: "upstream_tokens_total",
		Help: "Tokens for plugins' upstreams (auth token_exchange, client_credentials or user_consent), by plugin and outcome: exchanged (from the token endpoint), cached (or kept for a user who consented), consent_needed (the call was denied with an authorization URL), or failed (the call was denied).",
	}, []string{"plugin", "outcome"})
}

// UpstreamToken counts one upstream token a call needed, by its outcome; it
// is tokenexchange.Broker.OnOutcome.
func (m *Metrics) UpstreamToken(plugin string, o tokenexchange.Outcome) {
	m.upstream.WithLabelValues(plugin, string(o)).Inc()
}
