package wire

import (
	"context"

	"go.opentelemetry.io/contrib/instrumentation/google.golang.org/grpc/otelgrpc"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/stats"
)

// EnvTrace is set to "1" in a plugin's environment when the host traces
// calls: the plugin then reads the W3C trace context the host sends in each
// RPC's gRPC metadata (traceparent, tracestate) and hands the spans it makes
// to the host with Host.ExportSpans. Like the message limit, it has to be an
// environment variable: the plugin builds its gRPC server before the host
// can say anything over gRPC.
const EnvTrace = "PLUGKIT_TRACE"

// TraceDialOption gives each RPC on a connection a client span of tp (the
// child of the span in the call's context) and sends its W3C trace context
// in the metadata, for the RPCs of a sampled trace only (see sampledOnly).
func TraceDialOption(tp trace.TracerProvider) grpc.DialOption {
	return grpc.WithStatsHandler(sampledOnly{
		h: otelgrpc.NewClientHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagation.TraceContext{})),
		wants: func(ctx context.Context) bool {
			return trace.SpanContextFromContext(ctx).IsSampled()
		},
	})
}

// TraceServerOption gives each RPC that arrives with a W3C trace context a
// server span of tp, the child of the caller's, in the handler's context.
func TraceServerOption(tp trace.TracerProvider) grpc.ServerOption {
	return grpc.StatsHandler(sampledOnly{
		h: otelgrpc.NewServerHandler(otelgrpc.WithTracerProvider(tp), otelgrpc.WithPropagators(propagation.TraceContext{})),
		wants: func(ctx context.Context) bool {
			md, _ := metadata.FromIncomingContext(ctx)
			return len(md.Get("traceparent")) > 0
		},
	})
}

// sampledOnly runs otelgrpc's handler for the RPCs it wants only: the RPCs
// of a call that is not traced (sampled out, or outside any call, such as
// a plugin's start) pay one context lookup instead of otelgrpc's spans,
// attributes, metadata and metrics. A skipped RPC is marked in its context,
// since otelgrpc's HandleRPC would otherwise act on whatever span the
// context holds (the caller's own).
type sampledOnly struct {
	h     stats.Handler
	wants func(context.Context) bool
}

type skippedKey struct{}

func (s sampledOnly) TagRPC(ctx context.Context, info *stats.RPCTagInfo) context.Context {
	if !s.wants(ctx) {
		return context.WithValue(ctx, skippedKey{}, true)
	}
	return s.h.TagRPC(ctx, info)
}

func (s sampledOnly) HandleRPC(ctx context.Context, rs stats.RPCStats) {
	if ctx.Value(skippedKey{}) == nil {
		s.h.HandleRPC(ctx, rs)
	}
}

func (s sampledOnly) TagConn(ctx context.Context, info *stats.ConnTagInfo) context.Context {
	return s.h.TagConn(ctx, info)
}

func (s sampledOnly) HandleConn(ctx context.Context, cs stats.ConnStats) { s.h.HandleConn(ctx, cs) }
