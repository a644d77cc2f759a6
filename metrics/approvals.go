package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// routeMetrics are the approval routes' requests: how many wait now, how
// they ended and after how long, answers refused (self-approval, not an
// approver) and webhook deliveries that failed, by route. Routes are few
// (the deployment declares them), so the label is bounded.
type routeMetrics struct {
	pending  *prometheus.GaugeVec
	outcomes *prometheus.CounterVec
	seconds  *prometheus.HistogramVec
	refused  *prometheus.CounterVec
	webhook  *prometheus.CounterVec
}

// decisionBuckets span a quick approval (seconds) to a route's timeout
// (hours), in seconds.
var decisionBuckets = []float64{1, 5, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 7200, 14400}

func newRouteMetrics(reg *prometheus.Registry) routeMetrics {
	r := routeMetrics{
		pending: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Namespace: "plugkit", Name: "approval_requests_pending",
			Help: "Calls parked now waiting for the approvers of a route, by route.",
		}, []string{"route"}),
		outcomes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "approval_requests_total",
			Help: "Approval requests of routes that ended, by route and state: approved, denied, timed_out, withdrawn (the caller cancelled), abandoned.",
		}, []string{"route", "state"}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "plugkit", Name: "approval_decision_seconds",
			Help:    "Time from an approval request to its end, by route.",
			Buckets: decisionBuckets,
		}, []string{"route"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "approval_answers_refused_total",
			Help: "Answers to approval requests that did not count (the call's own principal, not an approver of the route, the same approver twice), by route.",
		}, []string{"route"}),
		webhook: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "approval_webhook_failures_total",
			Help: "Webhook deliveries of approval requests that failed after every retry, by route.",
		}, []string{"route"}),
	}
	reg.MustRegister(r.pending, r.outcomes, r.seconds, r.refused, r.webhook)
	return r
}

// ApprovalRequested counts a new request of route as pending.
func (m *Metrics) ApprovalRequested(route string) { m.routes.pending.WithLabelValues(route).Inc() }

// ApprovalEnded records how a request of route ended, after waited.
func (m *Metrics) ApprovalEnded(route, state string, waited time.Duration) {
	m.routes.pending.WithLabelValues(route).Dec()
	m.routes.outcomes.WithLabelValues(route, state).Inc()
	m.routes.seconds.WithLabelValues(route).Observe(waited.Seconds())
}

// ApprovalAbandoned counts a request of route that this replica found
// abandoned by the replica that held it (whose pending gauge it was).
func (m *Metrics) ApprovalAbandoned(route string) {
	m.routes.outcomes.WithLabelValues(route, "abandoned").Inc()
}

// ApprovalAnswerRefused counts an answer to a request of route that did
// not count.
func (m *Metrics) ApprovalAnswerRefused(route string) { m.routes.refused.WithLabelValues(route).Inc() }

// ApprovalWebhookFailed counts a notification of route that was not
// delivered.
func (m *Metrics) ApprovalWebhookFailed(route string) { m.routes.webhook.WithLabelValues(route).Inc() }
