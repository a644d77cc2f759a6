package wire

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
)

// TestRPCSpans: an RPC of a sampled call gets a client span and carries
// its trace context; the server makes its span the child of it; an RPC of
// a call that is not sampled gets neither.
func TestRPCSpans(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	tracer := tp.Tracer("test")
	client, server := clientSpans(tracer), serverSpans(tracer)
	const method = "/plugkit.v1.Plugin/Guard"

	// The client's outgoing metadata becomes the server's incoming.
	var serverCtx context.Context
	invoke := func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, opts ...grpc.CallOption) error {
		md, _ := metadata.FromOutgoingContext(ctx)
		_, err := server(metadata.NewIncomingContext(context.Background(), md), nil, &grpc.UnaryServerInfo{FullMethod: method},
			func(ctx context.Context, req any) (any, error) {
				serverCtx = ctx
				return nil, status.Error(grpccodes.PermissionDenied, "no")
			})
		return err
	}

	ctx, call := tracer.Start(context.Background(), "plugkit call")
	if err := client(ctx, method, nil, nil, nil, invoke); status.Code(err) != grpccodes.PermissionDenied {
		t.Fatalf("err = %v", err)
	}
	call.End()
	spans := rec.Ended()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want server, client, call", len(spans))
	}
	srv, cli := spans[0], spans[1]
	if srv.Name() != "plugkit.v1.Plugin/Guard" || srv.SpanKind() != trace.SpanKindServer || cli.SpanKind() != trace.SpanKindClient {
		t.Errorf("spans %q %v, %q %v", srv.Name(), srv.SpanKind(), cli.Name(), cli.SpanKind())
	}
	if srv.Parent().SpanID() != cli.SpanContext().SpanID() || cli.Parent().SpanID() != call.SpanContext().SpanID() {
		t.Error("server span not the client span's child, or client span not the call's")
	}
	if trace.SpanContextFromContext(serverCtx).SpanID() != srv.SpanContext().SpanID() {
		t.Error("the handler's context does not hold the server span")
	}
	if srv.Status().Code != codes.Error || cli.Status().Code != codes.Error {
		t.Errorf("a failed RPC's spans have status %v, %v", srv.Status(), cli.Status())
	}

	// Not sampled: no span, no trace context on the wire.
	unsampled := sdktrace.NewTracerProvider(sdktrace.WithSampler(sdktrace.NeverSample())).Tracer("test")
	ctx, quiet := unsampled.Start(context.Background(), "plugkit call")
	defer quiet.End()
	if err := client(ctx, method, nil, nil, nil, func(ctx context.Context, _ string, _, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		if md, _ := metadata.FromOutgoingContext(ctx); len(md.Get("traceparent")) > 0 {
			t.Error("an unsampled call sent a trace context")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if _, err := server(context.Background(), nil, &grpc.UnaryServerInfo{FullMethod: method}, func(ctx context.Context, _ any) (any, error) {
		if trace.SpanContextFromContext(ctx).IsValid() {
			t.Error("an RPC without a trace context got a span")
		}
		return nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	if n := len(rec.Ended()); n != 3 {
		t.Errorf("%d spans after the unsampled call, want still 3", n)
	}
}
