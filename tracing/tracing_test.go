package tracing_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/tracing"
)

// TestOnlyCallsStartTraces: a call's span with no parent is sampled at the
// configured share; any other span with no parent never is; a span whose
// (remote) parent was sampled always is.
func TestOnlyCallsStartTraces(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(tracing.Sampler(1)))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("test")
	ctx := context.Background()

	_, call := tr.Start(ctx, pipeline.CallSpanName)
	_, other := tr.Start(ctx, "plugkit.v1.Plugin/Apply")
	remote := trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: [16]byte{1}, SpanID: [8]byte{1}, TraceFlags: trace.FlagsSampled, Remote: true}))
	_, child := tr.Start(remote, "plugkit.v1.Plugin/Guard")
	for _, c := range []struct {
		name string
		span trace.Span
		want bool
	}{{"a call", call, true}, {"a span that is not a call's", other, false}, {"a child of a sampled parent", child, true}} {
		if got := c.span.SpanContext().IsSampled(); got != c.want {
			t.Errorf("%s: sampled %v, want %v", c.name, got, c.want)
		}
		c.span.End()
	}

	none := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(tracing.Sampler(0)))
	defer none.Shutdown(context.Background())
	if _, span := none.Tracer("test").Start(ctx, pipeline.CallSpanName); span.SpanContext().IsSampled() {
		t.Error("sample 0 traced a call")
	}
}

// TestExportNamesThePlugin: a plugin's spans reach the collector as its
// own service, whatever service it named.
func TestExportNamesThePlugin(t *testing.T) {
	var (
		mu  sync.Mutex
		got []*tracepb.ResourceSpans
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(b, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		mu.Lock()
		got = append(got, req.GetResourceSpans()...)
		mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	ctx := context.Background()
	tr, err := tracing.New(ctx, tracing.Config{Endpoint: srv.URL + "/v1/traces", Sample: 1}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(ctx)

	str := func(k, v string) *commonpb.KeyValue {
		return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
	}
	sent, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{
		{Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "plugkit"), str("host.name", "h")}},
			ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "mine", TraceId: make([]byte, 16), SpanId: make([]byte, 8)}}}}},
		{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{Name: "no resource", TraceId: make([]byte, 16), SpanId: make([]byte, 8)}}}}},
	}})
	if err := tr.Export(ctx, "search", sent); err != nil {
		t.Fatal(err)
	}
	if err := tr.Export(ctx, "search", []byte("not protobuf at all")); err == nil {
		t.Error("garbage was exported")
	}
	mu.Lock()
	defer mu.Unlock()
	if len(got) != 2 {
		t.Fatalf("the collector got %d resources, want 2", len(got))
	}
	for _, rs := range got {
		attrs := map[string]string{}
		for _, a := range rs.GetResource().GetAttributes() {
			attrs[a.GetKey()] = a.GetValue().GetStringValue()
		}
		if attrs["service.name"] != "plugkit/search" {
			t.Errorf("resource %v: want service.name plugkit/search", attrs)
		}
	}
}

// TestAttackSpanBytesBounded: span exports are limited by bytes a second,
// not only by batches: a plugin sending 3 MB batches against a collector
// that holds each request gets the first through and the rest dropped,
// each refusal naming the limit, so what waits on the collector is
// bounded by the burst.
func TestAttackSpanBytesBounded(t *testing.T) {
	release := make(chan struct{})
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
		<-release // a slow collector
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	}))
	defer srv.Close()
	defer close(release)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	tr, err := tracing.New(ctx, tracing.Config{Endpoint: srv.URL + "/v1/traces", Sample: 1}, "test")
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Shutdown(ctx)
	big, _ := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: []*tracepb.ResourceSpans{{ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{
		{Name: strings.Repeat("x", 3<<20), TraceId: make([]byte, 16), SpanId: make([]byte, 8)}}}}}}})
	var wg sync.WaitGroup
	var refused atomic.Int64
	for range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ectx, ecancel := context.WithTimeout(ctx, 2*time.Second)
			defer ecancel()
			if err := tr.Export(ectx, "flood", big); err != nil && strings.Contains(err.Error(), "span export limit") {
				refused.Add(1)
			}
		}()
	}
	wg.Wait()
	if refused.Load() < 8 {
		t.Errorf("%d of 10 batches of 3 MB refused at once, want at least 8 (a burst of %d bytes)", refused.Load(), tracing.ExportBurstBytes)
	}
}
