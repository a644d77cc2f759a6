package host

import (
	"context"
	"encoding/json"
	"net"
	"strconv"

	"github.com/plugkit-go/plugkit/egress"
	"github.com/plugkit-go/plugkit/pipeline"
)

// egressEvent is told every connection a sandboxed plugin asked its egress
// proxy for: counted in the metrics, and audited as a record through stage
// 5 (pipeline.Tools.Record), so the audit log holds one line per
// connection, allowed or refused, next to the calls.
func (h *Host) egressEvent(ev egress.Event) {
	h.Metrics.Egress(ev)
	args, err := json.Marshal(egressRecord{
		Plugin: ev.Plugin, Call: ev.Call, Method: ev.Method, Host: ev.Host, Port: ev.Port, Address: ev.Addr,
		Allowed: ev.Allowed, Reason: ev.Reason, BytesOut: ev.BytesOut, BytesIn: ev.BytesIn,
		DurationMS: float64(ev.Duration.Microseconds()) / 1000,
	})
	if err != nil {
		h.log.Error("egress record", "plugin", ev.Plugin, "error", err)
		return
	}
	r := pipeline.Result{OK: ev.Allowed && ev.Reason == "", Duration: ev.Duration}
	switch {
	case !ev.Allowed:
		r = pipeline.Fail(pipeline.CodeDenied, "egress refused: "+ev.Reason)
		r.DecidedBy = "egress"
		r.Duration = ev.Duration
	case ev.Reason != "":
		// Allowed, but the destination failed (a dial, a reset).
		r = pipeline.Fail(pipeline.CodeToolError, ev.Reason)
		r.Duration = ev.Duration
	}
	name := "egress:" + net.JoinHostPort(ev.Host, strconv.Itoa(int(ev.Port)))
	h.tools.Record(context.Background(), name, ev.Plugin, args, r)
}

// egressRecord is an egress record's arguments, as the audit records them
// (in full with record_arguments, else their SHA-256).
type egressRecord struct {
	Plugin     string  `json:"plugin"`
	Call       string  `json:"call,omitempty"`
	Method     string  `json:"method"`
	Host       string  `json:"host"`
	Port       uint16  `json:"port"`
	Address    string  `json:"address,omitempty"`
	Allowed    bool    `json:"allowed"`
	Reason     string  `json:"reason,omitempty"`
	BytesOut   int64   `json:"bytes_out"`
	BytesIn    int64   `json:"bytes_in"`
	DurationMS float64 `json:"duration_ms"`
}

// egressResolver asks the DNS server at addr (host:port) for the egress
// proxies' names; nil (the system's resolver) for "".
func egressResolver(addr string) egress.Resolver {
	if addr == "" {
		return nil
	}
	var d net.Dialer
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		return d.DialContext(ctx, network, addr)
	}}
}
