package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// limitStore is the shared rate limit store's latency and errors.
type limitStore struct {
	seconds prometheus.Histogram
	errors  prometheus.Counter
}

func newLimitStore(reg *prometheus.Registry) limitStore {
	l := limitStore{
		seconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "plugkit", Name: "limit_store_duration_seconds",
			Help:    "Time each question to the shared per-principal rate limit store (Redis) took, errors included.",
			Buckets: latencyBuckets,
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "limit_store_errors_total",
			Help: "Questions to the shared per-principal rate limit store that failed (then on_store_error decided the call).",
		}),
	}
	reg.MustRegister(l.seconds, l.errors)
	return l
}

// LimitStore records one question to the shared rate limit store; it is
// policy.PerPrincipalConfig.OnStore.
func (m *Metrics) LimitStore(d time.Duration, err error) {
	m.store.seconds.Observe(d.Seconds())
	if err != nil {
		m.store.errors.Inc()
	}
}
