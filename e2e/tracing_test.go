package e2e

import (
	"compress/gzip"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// collector is an OTLP/HTTP trace receiver: it keeps every span it is
// sent, with the service.name of its resource.
type collector struct {
	mu    sync.Mutex
	spans []received
}

type received struct {
	service string
	span    *tracepb.Span
}

func (c *collector) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "not an OTLP/HTTP protobuf trace export", http.StatusBadRequest)
		return
	}
	var body io.Reader = r.Body
	if r.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		body = z
	}
	b, err := io.ReadAll(body)
	var req coltracepb.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	c.mu.Lock()
	for _, rs := range req.GetResourceSpans() {
		service := ""
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				service = a.GetValue().GetStringValue()
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				c.spans = append(c.spans, received{service, s})
			}
		}
	}
	c.mu.Unlock()
	out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (c *collector) all() []received {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.spans)
}

// TestTraceAcrossPlugins: with a tracing block, a call of the search tool
// (a remote tool that calls the index plugin's service, through safety's
// remote guard) is one trace whose spans come from the host and from each
// plugin process, each parented on the RPC that carried the call to it, and
// none of them holds the call's arguments.
func TestTraceAcrossPlugins(t *testing.T) {
	needShippedDeployment(t)
	col := &collector{}
	srv := httptest.NewServer(col)
	defer srv.Close()
	h := startFaultHost(t, deploymentTweaks{host: fmt.Sprintf("  tracing {\n    endpoint = %q\n  }\n", srv.URL)})
	const query = "hot reload"
	if r, _ := callJSON(t, h.config, "search", fmt.Sprintf(`{"q":%q}`, query)); !r.OK {
		t.Fatalf("search: %+v", r)
	}
	// Stopping sends what the host and the plugins still hold.
	if _, stderr, code := cli(t, "stop", "-c", h.config); code != 0 {
		t.Fatalf("stop: exit %d %s", code, stderr)
	}
	select {
	case <-h.run.done:
	case <-time.After(30 * time.Second):
		t.Fatal("host run did not stop")
	}

	spans := col.all()
	var call *received
	for i, s := range spans {
		if s.span.GetName() == "plugkit call" && attr(s.span, "plugkit.tool") == "search" {
			call = &spans[i]
		}
	}
	if call == nil {
		t.Fatalf("no call span for search among %d spans:\n%s", len(spans), describe(spans))
	}
	trace := call.span.GetTraceId()
	byID := map[string]received{}
	var inTrace []received
	for _, s := range spans {
		if string(s.span.GetTraceId()) == string(trace) {
			byID[string(s.span.GetSpanId())] = s
			inTrace = append(inTrace, s)
		}
	}
	// path is the chain of spans from s up to the root, as name@service.
	path := func(s received) []string {
		var p []string
		for {
			p = append(p, s.span.GetName()+"@"+s.service)
			parent, ok := byID[string(s.span.GetParentSpanId())]
			if len(s.span.GetParentSpanId()) == 0 || !ok {
				if len(s.span.GetParentSpanId()) != 0 {
					p = append(p, "(missing parent "+hex.EncodeToString(s.span.GetParentSpanId())+")")
				}
				return p
			}
			s = parent
		}
	}
	for _, want := range [][]string{
		{
			"bleve search@plugkit/index",
			"plugkit.v1.Plugin/CallService@plugkit/index",
			"plugkit.v1.Plugin/CallService@plugkit",
			"plugkit.v1.Host/CallService@plugkit",
			"plugkit.v1.Host/CallService@plugkit/search",
			"plugkit.v1.Plugin/ExecuteTool@plugkit/search",
			"plugkit.v1.Plugin/ExecuteTool@plugkit",
			"stage 3 execute@plugkit",
			"plugkit call@plugkit",
		},
		{
			"plugkit.v1.Plugin/Guard@plugkit/safety",
			"plugkit.v1.Plugin/Guard@plugkit",
			"stage 2 guards@plugkit",
			"plugkit call@plugkit",
		},
	} {
		found := false
		for _, s := range inTrace {
			if s.span.GetName()+"@"+s.service == want[0] {
				found = true
				if got := path(s); !slices.Equal(got, want) {
					t.Errorf("path of %s:\n  %s\nwant\n  %s", want[0], strings.Join(got, "\n  "), strings.Join(want, "\n  "))
				}
			}
		}
		if !found {
			t.Errorf("no span %s in the call's trace:\n%s", want[0], describe(inTrace))
		}
	}
	for _, s := range spans {
		for _, a := range s.span.GetAttributes() {
			if strings.Contains(a.GetValue().String(), query) {
				t.Errorf("span %s@%s: attribute %s holds the arguments", s.span.GetName(), s.service, a.GetKey())
			}
		}
	}
}

func attr(s *tracepb.Span, key string) string {
	for _, a := range s.GetAttributes() {
		if a.GetKey() == key {
			return a.GetValue().GetStringValue()
		}
	}
	return ""
}

func describe(spans []received) string {
	var b strings.Builder
	for _, s := range spans {
		fmt.Fprintf(&b, "  %s@%s trace %x span %x parent %x\n", s.span.GetName(), s.service,
			s.span.GetTraceId(), s.span.GetSpanId(), s.span.GetParentSpanId())
	}
	return b.String()
}
