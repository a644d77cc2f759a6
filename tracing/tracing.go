// Package tracing sends a deployment's traces to an OpenTelemetry collector
// over OTLP/HTTP: a span for each call and each stage it reaches (package
// pipeline), a span for each RPC into a plugin process (package wire, used by
// remote), and the spans plugins make inside a traced call.
//
// Plugins do not reach the collector themselves (a sandboxed plugin has no
// network): the SDK hands their spans to the host (Host.ExportSpans), and
// Export sends them on, with the plugin's name as their service, so that a
// plugin cannot pass its spans off as another's or the host's.
//
// Only a call starts a trace: a span with no parent that is not a call's
// (a plugin's start, a stream to an observer) is not recorded, and a call
// whose client sent a trace context follows the client's sampling decision.
//
//	t, err := tracing.New(ctx, tracing.Config{Endpoint: "http://127.0.0.1:4318/v1/traces", Sample: 1}, version)
//	tools := pipeline.New(k, pipeline.Options{Tracer: t.Tracer()})
//	mgr, err := remote.NewManager(k, tools, remote.Options{TracerProvider: t.Provider(), ExportSpans: t.Export})
//	defer t.Shutdown(ctx)
package tracing

import (
	"context"
	"fmt"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	"golang.org/x/time/rate"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/pipeline"
)

// ServiceName is the host's service name in its spans; a plugin's spans
// are the service ServiceName + "/" + the plugin's name.
const ServiceName = "plugkit"

// Config says where traces go.
type Config struct {
	// Endpoint is the collector's OTLP/HTTP traces URL.
	Endpoint string
	// Sample is the share of calls traced, 0 to 1.
	Sample float64
	// Headers are sent with every export.
	Headers map[string]string
}

// Limits of what plugins' spans may cost the host: a plugin's exports are
// held in memory while the collector takes them, so a slow collector and
// large batches (20 MB each took a host from 186 MB to 1.18 GB) would grow
// the host without bound. Bytes past the rate are dropped (the plugin is
// told), never queued: a span is worth less than the host's memory.
const (
	// ExportBytesPerSecond is the rate of plugin span bytes sent on, all
	// plugins together.
	ExportBytesPerSecond = 1 << 20
	// ExportBurstBytes is the most sent at once, and the largest batch.
	ExportBurstBytes = 4 << 20
)

// Tracing is the host's tracer provider and its exporter.
type Tracing struct {
	tp     *sdktrace.TracerProvider
	client otlptrace.Client
	bytes  *rate.Limiter // plugin span bytes, ExportBytesPerSecond
}

// New starts the exporter (it connects lazily: an unreachable collector
// loses spans, never a call) and the provider.
func New(ctx context.Context, cfg Config, version string) (*Tracing, error) {
	opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(cfg.Endpoint)}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
	}
	client := otlptracehttp.NewClient(opts...)
	exp, err := otlptrace.New(ctx, client)
	if err != nil {
		return nil, fmt.Errorf("tracing: start the OTLP exporter for %s: %w", cfg.Endpoint, err)
	}
	res := resource.NewSchemaless(
		attribute.String("service.name", ServiceName),
		attribute.String("service.version", version),
	)
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(Sampler(cfg.Sample)),
	)
	return &Tracing{tp: tp, client: client, bytes: rate.NewLimiter(ExportBytesPerSecond, ExportBurstBytes)}, nil
}

// Sampler starts a trace at a call only, for the share sample of calls,
// and follows the parent's decision everywhere else.
func Sampler(sample float64) sdktrace.Sampler {
	return sdktrace.ParentBased(callRoots{sdktrace.TraceIDRatioBased(sample)})
}

// callRoots decides the spans that have no parent: a call's by ratio, any
// other never.
type callRoots struct{ ratio sdktrace.Sampler }

func (s callRoots) ShouldSample(p sdktrace.SamplingParameters) sdktrace.SamplingResult {
	if p.Name != pipeline.CallSpanName {
		return sdktrace.SamplingResult{Decision: sdktrace.Drop, Tracestate: trace.SpanContextFromContext(p.ParentContext).TraceState()}
	}
	return s.ratio.ShouldSample(p)
}

func (s callRoots) Description() string {
	return "CallRoots{" + s.ratio.Description() + "}"
}

// Tracer is the pipeline's tracer (pipeline.Options.Tracer).
func (t *Tracing) Tracer() trace.Tracer { return t.tp.Tracer("github.com/plugkit-go/plugkit") }

// Provider is the provider of the RPC spans (remote.Options.TracerProvider).
func (t *Tracing) Provider() trace.TracerProvider { return t.tp }

// Export sends a plugin's spans on (remote.Options.ExportSpans): otlp is
// an OTLP ExportTraceServiceRequest, whose resources are named for plugin.
func (t *Tracing) Export(ctx context.Context, plugin string, otlp []byte) error {
	if !t.bytes.AllowN(time.Now(), len(otlp)) {
		return fmt.Errorf("spans of %s dropped: %d bytes over the host's span export limit of %d bytes a second (at most %d at once)", plugin, len(otlp), ExportBytesPerSecond, ExportBurstBytes)
	}
	var req coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(otlp, &req); err != nil {
		return fmt.Errorf("spans of %s: not an OTLP trace export: %w", plugin, err)
	}
	for _, rs := range req.GetResourceSpans() {
		if rs.Resource == nil {
			rs.Resource = &resourcepb.Resource{}
		}
		rs.Resource.Attributes = setService(rs.Resource.Attributes, ServiceName+"/"+plugin)
	}
	if err := t.client.UploadTraces(ctx, req.GetResourceSpans()); err != nil {
		return fmt.Errorf("spans of %s: %w", plugin, err)
	}
	return nil
}

// setService replaces service.name in attrs by name.
func setService(attrs []*commonpb.KeyValue, name string) []*commonpb.KeyValue {
	kv := &commonpb.KeyValue{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: name}}}
	for i, a := range attrs {
		if a.GetKey() == "service.name" {
			attrs[i] = kv
			return attrs
		}
	}
	return append(attrs, kv)
}

// Shutdown sends the spans still held and stops the exporter.
func (t *Tracing) Shutdown(ctx context.Context) error {
	return t.tp.Shutdown(ctx)
}
