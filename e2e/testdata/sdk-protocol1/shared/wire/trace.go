package wire

import (
	"context"
	"strings"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// EnvTrace is set to "1" in a plugin's environment when the host traces
// calls: the plugin then reads the W3C trace context the host sends in each
// RPC's gRPC metadata (traceparent, tracestate) and hands the spans it makes
// to the host with Host.ExportSpans. Like the message limit, it has to be an
// environment variable: the plugin builds its gRPC server before the host
// can say anything over gRPC.
const EnvTrace = "PLUGKIT_TRACE"

// The RPC spans are made by unary interceptors that act only on the RPCs
// of a traced call: an RPC of a call the sampler left out, or outside any
// call (a plugin's start, a stage-5 result), costs one context lookup and
// nothing else. (otelgrpc's stats handlers, which this replaces, run for
// every RPC of the connection and allocate a stats event at each step of
// each one, traced or not.) The spans are named and described as
// otelgrpc's are: the method without its leading slash, rpc.system,
// rpc.service, rpc.method and rpc.grpc.status_code.

const instrumentation = "github.com/plugkit-go/plugkit/shared/wire"

var propagator = propagation.TraceContext{}

// TraceDialOption gives each RPC of a sampled trace a client span of tp
// (the child of the span in the call's context) and sends its W3C trace
// context in the metadata.
func TraceDialOption(tp trace.TracerProvider) grpc.DialOption {
	return grpc.WithChainUnaryInterceptor(TraceClientInterceptor(tp))
}

// TraceClientInterceptor is TraceDialOption's interceptor, for a call made
// some other way than a unary RPC (a frame on the call stream): its
// invoker finds the trace context in ctx's outgoing metadata.
func TraceClientInterceptor(tp trace.TracerProvider) grpc.UnaryClientInterceptor {
	return clientSpans(tp.Tracer(instrumentation))
}

func clientSpans(tracer trace.Tracer) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if !trace.SpanContextFromContext(ctx).IsSampled() {
			return invoker(ctx, method, req, reply, cc, opts...)
		}
		ctx, span := tracer.Start(ctx, strings.TrimPrefix(method, "/"), trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(rpcAttributes(method)...))
		defer span.End()
		carrier := propagation.MapCarrier{}
		propagator.Inject(ctx, carrier)
		for k, v := range carrier {
			ctx = metadata.AppendToOutgoingContext(ctx, k, v)
		}
		err := invoker(ctx, method, req, reply, cc, opts...)
		endRPC(span, err)
		return err
	}
}

// TraceServerOption gives each RPC that arrives with a W3C trace context a
// server span of tp, the child of the caller's, in the handler's context.
func TraceServerOption(tp trace.TracerProvider) grpc.ServerOption {
	return grpc.ChainUnaryInterceptor(TraceServerInterceptor(tp))
}

// TraceServerInterceptor is TraceServerOption's interceptor, for a call
// that arrives some other way than a unary RPC, its trace context in ctx's
// incoming metadata.
func TraceServerInterceptor(tp trace.TracerProvider) grpc.UnaryServerInterceptor {
	return serverSpans(tp.Tracer(instrumentation))
}

func serverSpans(tracer trace.Tracer) grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		parent := metadata.ValueFromIncomingContext(ctx, "traceparent")
		if len(parent) == 0 {
			return handler(ctx, req)
		}
		carrier := propagation.MapCarrier{"traceparent": parent[0]}
		if state := metadata.ValueFromIncomingContext(ctx, "tracestate"); len(state) > 0 {
			carrier["tracestate"] = state[0]
		}
		ctx = propagator.Extract(ctx, carrier)
		ctx, span := tracer.Start(ctx, strings.TrimPrefix(info.FullMethod, "/"), trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(rpcAttributes(info.FullMethod)...))
		defer span.End()
		resp, err := handler(ctx, req)
		endRPC(span, err)
		return resp, err
	}
}

// rpcAttributes describes the RPC "/package.Service/Method".
func rpcAttributes(fullMethod string) []attribute.KeyValue {
	service, method, _ := strings.Cut(strings.TrimPrefix(fullMethod, "/"), "/")
	return []attribute.KeyValue{
		attribute.String("rpc.system", "grpc"),
		attribute.String("rpc.service", service),
		attribute.String("rpc.method", method),
	}
}

// endRPC records the RPC's gRPC status on its span.
func endRPC(span trace.Span, err error) {
	st := status.Convert(err)
	span.SetAttributes(attribute.Int64("rpc.grpc.status_code", int64(st.Code())))
	if err != nil {
		span.SetStatus(codes.Error, st.Message())
	}
}
