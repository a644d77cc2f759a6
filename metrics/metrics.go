// Package metrics exposes a running deployment to Prometheus: every call
// the pipeline ends (by tool, code and who decided it), its latency, the
// calls in flight, reloads, and each plugin's state and process (restarts,
// resident memory, CPU time, a reported problem), in one registry served
// as /metrics.
//
// Labels are tool and plugin names, outcome codes and states only, never
// arguments or a caller's free text, so the number of series is bounded by
// the deployment. A bridged server may declare thousands of tools and
// replace them at will, so per-tool series exist only for tools registered
// when called, are deleted when their tool goes (Prune), and are capped:
// past MaxToolSeries tools, calls are counted under tool="other".
//
// A host makes one Metrics, gives the pipeline its Call (told of every call
// once stage 5 is over, so that a call denied before any tool ran is
// counted too), and serves Handler:
//
//	m := metrics.New(version, mgr.Status, tools.InFlight)
//	tools := pipeline.New(k, pipeline.Options{OnCall: m.Call, OnApproval: m.Approval})
//	http.Handle("/metrics", m.Handler())
package metrics

import (
	"net/http"
	"runtime"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
)

// Path is where Handler is served.
const Path = "/metrics"

// UnknownTool is the tool label of every call of a tool that does not
// exist, whatever name the caller gave.
const UnknownTool = "(unknown)"

// MaxToolSeries is how many tools get series of their own; the calls of any
// more are counted under OtherTool until some of them go.
const MaxToolSeries = 1000

// OtherTool is the tool label of the calls of tools past MaxToolSeries.
const OtherTool = "other"

// Metrics is the host's registry and what feeds it.
type Metrics struct {
	reg      *prometheus.Registry
	calls    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	reloads  *prometheus.CounterVec
	asks     *prometheus.CounterVec
	rpcs     *prometheus.HistogramVec
	refusals *prometheus.CounterVec
	// peerRefusals counts MCP connections refused for their peer's bound.
	peerRefusals prometheus.Counter
	upstream     *prometheus.CounterVec
	egress       egressMetrics // egress.go
	stages       [pipeline.NumStages]prometheus.Observer
	store        limitStore // limits.go
	shadow       *shadowMetrics
	routes       routeMetrics // approvals.go

	counters  sync.Map // callKey → prometheus.Counter
	observers sync.Map // tool → prometheus.Observer

	// labelled holds the tools with series of their own (tool → true);
	// tmu serialises adding and pruning them, which keeps the count.
	labelled  sync.Map
	tmu       sync.Mutex
	nlabelled int
	maxTools  int
}

// latencyBuckets span a check in-host (tens of µs) to a slow tool (tens of
// seconds), in seconds.
var latencyBuckets = []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60}

// New makes the registry. status lists the plugins (remote.Manager.Status)
// and inflight counts the calls running (pipeline.Tools.InFlight); both are
// read at each scrape, and either may be nil (a library host with no
// plugin processes has no status to report).
func New(version string, status func() []remote.Status, inflight func() int64) *Metrics {
	if status == nil {
		status = func() []remote.Status { return nil }
	}
	if inflight == nil {
		inflight = func() int64 { return 0 }
	}
	m := &Metrics{
		maxTools: MaxToolSeries,
		reg:      prometheus.NewRegistry(),
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "calls_total",
			Help: "Calls the pipeline ended, by tool, outcome code (\"ok\" for a success) and the plugin that decided a denial or a block.",
		}, []string{"tool", "code", "decided_by"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "plugkit", Name: "call_duration_seconds",
			Help:    "Time from a call's start to its result, stages 0 to 4, by tool.",
			Buckets: latencyBuckets,
		}, []string{"tool"}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "reloads_total",
			Help: "Reloads of the deployment file or of one plugin, by result (ok or failed).",
		}, []string{"result"}),
		rpcs: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "plugkit", Name: "plugin_rpc_duration_seconds",
			Help: "Calls into a plugin process's handlers, by plugin and kind (tool, pre_execute, guard, execute, post_execute, approver); " +
				"a wrapper's includes the rest of the chain it ran through next.",
			Buckets: latencyBuckets,
		}, []string{"plugin", "kind"}),
		asks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: "plugkit", Name: "approvals_total",
			Help: "Questions put to the approver, by tool and how they ended: approved, refused, timed_out, failed, no_approver, cancelled.",
		}, []string{"tool", "outcome"}),
	}
	stages := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "plugkit", Name: "stage_duration_seconds",
		Help: "Time calls spent in each stage of the pipeline, by stage (lookup, pre-execute, guards, execute, post-execute, result), " +
			"measured on a sample of the calls (one in 8 in the host) and on every traced call; a stage a call did not reach is not counted.",
		Buckets: latencyBuckets,
	}, []string{"stage"})
	for s := range pipeline.NumStages {
		m.stages[s] = stages.WithLabelValues(s.String())
	}
	m.refusals = prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "plugkit", Name: "mcp_auth_refusals_total",
		Help: "MCP HTTP requests refused for their credential before any call, by reason: missing or invalid; " +
			"without mcp_auth, other_user, unknown_user, plugin (a plugin of a host or its descendant) or unknown_process.",
	}, []string{"reason"})
	m.peerRefusals = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "plugkit", Name: "mcp_peer_refusals_total",
		Help: "MCP HTTP connections refused (429) because their peer, an address or a loopback user, held mcp_max_conns_per_peer already.",
	})
	m.refusals.WithLabelValues("missing")
	m.refusals.WithLabelValues("invalid")
	m.upstream = newUpstreamTokens()
	m.reg.MustRegister(m.upstream)
	m.egress = newEgress()
	m.reg.MustRegister(m.egress.conns, m.egress.bytes)
	build := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Namespace: "plugkit", Name: "build_info",
		Help: "The host's version and the Go version it was built with; always 1.",
	}, []string{"version", "goversion"})
	build.WithLabelValues(version, runtime.Version()).Set(1)
	m.reg.MustRegister(m.calls, m.duration, stages, m.reloads, m.asks, m.rpcs, m.refusals, m.peerRefusals, build,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: "plugkit", Name: "calls_in_flight",
			Help: "Calls running in the pipeline now.",
		}, func() float64 { return float64(inflight()) }),
		newPluginCollector(status),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{Namespace: "plugkit_host"}),
		collectors.NewGoCollector(),
	)
	m.store = newLimitStore(m.reg)
	m.shadow = newShadowMetrics(m.reg)
	m.routes = newRouteMetrics(m.reg)
	// Every reload result is there from the start, at zero, so that a rate
	// over it exists before the first reload.
	m.reloads.WithLabelValues("ok")
	m.reloads.WithLabelValues("failed")
	return m
}

// Handler serves the registry in the Prometheus exposition format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry is the registry, for tests and for collectors of a host's own.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Reloaded counts a reload's result.
func (m *Metrics) Reloaded(ok bool) {
	if ok {
		m.reloads.WithLabelValues("ok").Inc()
	} else {
		m.reloads.WithLabelValues("failed").Inc()
	}
}

// AuthRefused counts an MCP HTTP request refused for its credential; it is
// authn.Authenticator.OnRefused.
func (m *Metrics) AuthRefused(reason string) { m.refusals.WithLabelValues(reason).Inc() }

// PeerRefused counts an MCP HTTP connection refused for its peer's bound;
// it is httplimit.Limits.OnPeerRefused. The peer is not a label: every
// address that connects would add a series.
func (m *Metrics) PeerRefused(string) { m.peerRefusals.Inc() }

// RPC records how long a call into a plugin's handler took; it is
// remote.Options.OnRPC.
func (m *Metrics) RPC(plugin, kind string, d time.Duration) {
	m.rpcs.WithLabelValues(plugin, kind).Observe(d.Seconds())
}

// Approval counts how an Ask ended; it is pipeline.Options.OnApproval.
func (m *Metrics) Approval(tool string, outcome pipeline.Approval) {
	m.asks.WithLabelValues(m.toolLabel(tool), string(outcome)).Inc()
}

// Call counts a call's result, its latency and each stage's; it is
// pipeline.Options.OnCall.
func (m *Metrics) Call(e *pipeline.Execution, r pipeline.Result, times pipeline.StageTimes) {
	code, tool := string(r.Code()), e.Name()
	if r.OK {
		code = "ok"
	}
	if r.Code() == pipeline.CodeUnknownTool {
		// The name is the caller's, not the deployment's: one series for
		// them all keeps the series bounded.
		tool = UnknownTool
	} else {
		tool = m.toolLabel(tool)
	}
	m.counter(callKey{tool, code, r.DecidedBy}).Inc()
	if len(r.Shadow) > 0 {
		m.shadow.count(r.Shadow)
	}
	m.observer(tool).Observe(r.Duration.Seconds())
	for s, d := range times {
		if d >= 0 {
			m.stages[s].Observe(d.Seconds())
		}
	}
}

// callKey is one series of plugkit_calls_total.
type callKey struct{ tool, code, decidedBy string }

// counter and observer keep each series' child once made: a lookup by
// label values hashes them on every call, a map lookup by key less so.
func (m *Metrics) counter(k callKey) prometheus.Counter {
	if c, ok := m.counters.Load(k); ok {
		return c.(prometheus.Counter)
	}
	c, _ := m.counters.LoadOrStore(k, m.calls.WithLabelValues(k.tool, k.code, k.decidedBy))
	return c.(prometheus.Counter)
}

func (m *Metrics) observer(tool string) prometheus.Observer {
	if o, ok := m.observers.Load(tool); ok {
		return o.(prometheus.Observer)
	}
	o, _ := m.observers.LoadOrStore(tool, m.duration.WithLabelValues(tool))
	return o.(prometheus.Observer)
}

// toolLabel is the tool label of a call of tool: its name while fewer than
// maxTools tools have series, OtherTool past that.
func (m *Metrics) toolLabel(tool string) string {
	if _, ok := m.labelled.Load(tool); ok {
		return tool
	}
	m.tmu.Lock()
	defer m.tmu.Unlock()
	if _, ok := m.labelled.Load(tool); ok {
		return tool
	}
	if m.nlabelled >= m.maxTools {
		return OtherTool
	}
	m.labelled.Store(tool, true)
	m.nlabelled++
	return tool
}

// Prune deletes the series of every tool that registered says is gone
// (the host calls it whenever the tool registry changes), so that tools a
// bridged server declared and withdrew leave nothing behind. A call still
// in flight for a tool pruned under it counts it again, until the next
// change prunes it.
func (m *Metrics) Prune(registered func(tool string) bool) {
	m.tmu.Lock()
	defer m.tmu.Unlock()
	var gone []string
	m.labelled.Range(func(k, _ any) bool {
		if t := k.(string); !registered(t) {
			gone = append(gone, t)
		}
		return true
	})
	for _, t := range gone {
		m.labelled.Delete(t)
		m.nlabelled--
		m.observers.Delete(t)
		m.duration.DeleteLabelValues(t)
		m.calls.DeletePartialMatch(prometheus.Labels{"tool": t})
		m.asks.DeletePartialMatch(prometheus.Labels{"tool": t})
	}
	if len(gone) == 0 {
		return
	}
	m.counters.Range(func(k, _ any) bool {
		if ck := k.(callKey); !registered(ck.tool) && ck.tool != UnknownTool && ck.tool != OtherTool {
			m.counters.Delete(k)
		}
		return true
	})
}
