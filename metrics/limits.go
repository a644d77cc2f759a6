package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// limitStore is the shared per-principal limit store's latency and errors,
// by op: "rate" (take from a rate), "acquire", "renew" and "release" (a
// concurrency slot's lease).
type limitStore struct {
	seconds *prometheus.HistogramVec
	errors  *prometheus.CounterVec
}

func newLimitStore(reg *prometheus.Registry) limitStore {
	l := limitStore{
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "plugkit", Name: "limit_store_duration_seconds",
			Help:    "Time each question to the shared per-principal limit store (Redis) took, errors included, by op: rate, acquire, renew, release.",
			Buckets: latencyBuckets,
		}, []string{"op"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "limit_store_errors_total",
			Help: "Questions to the shared per-principal limit store that failed, by op (on_store_error decided a failed rate or acquire's call; a renew also fails when its lease had lapsed).",
		}, []string{"op"}),
	}
	reg.MustRegister(l.seconds, l.errors)
	return l
}

// LimitStore records one question to the shared limit store; it is
// policy.PerPrincipalConfig.OnStore.
func (m *Metrics) LimitStore(op string, d time.Duration, err error) {
	m.store.seconds.WithLabelValues(op).Observe(d.Seconds())
	if err != nil {
		m.store.errors.WithLabelValues(op).Inc()
	}
}
