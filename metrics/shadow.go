package metrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/plugkit-go/plugkit/pipeline"
)

// MaxShadowSeries bounds plugkit_shadow_decisions_total's series: a
// plugin in shadow names its rules itself, and a plugin must not grow the
// host's registry without bound. Past it, a new rule is counted as
// OtherRule.
const MaxShadowSeries = 256

// OtherRule is the rule label of shadow decisions past MaxShadowSeries.
const OtherRule = "other"

// shadowMetrics counts what listeners in shadow would have decided.
type shadowMetrics struct {
	decisions *prometheus.CounterVec
	mu        sync.Mutex
	series    map[[3]string]prometheus.Counter
}

func newShadowMetrics(reg *prometheus.Registry) *shadowMetrics {
	s := &shadowMetrics{
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "shadow_decisions_total",
			Help: "Decisions of listeners in shadow that were recorded and not applied, by plugin, rule (\"\" when the listener named none) and would (DENIED or ASK).",
		}, []string{"plugin", "rule", "would"}),
		series: map[[3]string]prometheus.Counter{},
	}
	reg.MustRegister(s.decisions)
	return s
}

func (s *shadowMetrics) count(ds []pipeline.ShadowDecision) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range ds {
		k := [3]string{d.Plugin, d.Rule, d.Would}
		c, ok := s.series[k]
		if !ok {
			if len(s.series) >= MaxShadowSeries {
				k[1] = OtherRule
			}
			if c, ok = s.series[k]; !ok {
				c = s.decisions.WithLabelValues(k[0], k[1], k[2])
				s.series[k] = c
			}
		}
		c.Inc()
	}
}
