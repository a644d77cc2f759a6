package sdk

import (
	"context"
	"errors"
	"os"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// tracing is the plugin's side of the host's traces, on when the host
// started the process with PLUGKIT_TRACE=1. Each handler's context then
// holds the span of the host's RPC (wire.TraceServerOption reads the trace
// context from the metadata), so a span the plugin starts from it with the
// global provider (otel.Tracer) joins the call's trace; so does a call back to the
// host (Next, ExecuteTool). Finished spans go to the host in batches
// (Host.ExportSpans), which sends them on: the plugin needs no network.
//
// The provider records only spans whose parent is recorded: nothing the
// plugin does outside a traced call makes a trace.
type tracing struct {
	tp    *sdktrace.TracerProvider
	relay *spanRelay
	calls grpc.UnaryServerInterceptor // the server span of a call on the call stream
}

// traceBatchTimeout is how long a finished span may wait before it goes to
// the host: short, so that a trace is whole soon after its call.
const traceBatchTimeout = 200 * time.Millisecond

// newTracing returns the process's tracing, or nil when the host does not
// trace. It sets the global tracer provider and propagator.
func newTracing() *tracing {
	if os.Getenv(wire.EnvTrace) != "1" {
		return nil
	}
	relay := &spanRelay{}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(otlptrace.NewUnstarted(relay), sdktrace.WithBatchTimeout(traceBatchTimeout)),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.NeverSample())),
	)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	return &tracing{tp: tp, relay: relay, calls: wire.TraceServerInterceptor(tp)}
}

// attach gives the relay the server whose host connection carries the spans.
func (t *tracing) attach(s *server) {
	if t != nil {
		t.relay.srv.Store(s)
	}
}

// serverOptions read the trace context of each RPC from the host.
func (t *tracing) serverOptions() []grpc.ServerOption {
	if t == nil {
		return nil
	}
	return []grpc.ServerOption{wire.TraceServerOption(t.tp)}
}

// callInterceptor makes the server span of a call that arrives on the call
// stream, as serverOptions does for an RPC; nil when the host does not
// trace.
func (t *tracing) callInterceptor() grpc.UnaryServerInterceptor {
	if t == nil {
		return nil
	}
	return t.calls
}

// dialOptions carry the trace context in each call to the host.
func (t *tracing) dialOptions() []grpc.DialOption {
	if t == nil {
		return nil
	}
	return []grpc.DialOption{wire.TraceDialOption(t.tp)}
}

// clientInterceptor makes the client span of a call back to the host that
// goes as a frame, as dialOptions does for an RPC; nil when the host does
// not trace.
func (t *tracing) clientInterceptor() grpc.UnaryClientInterceptor {
	if t == nil {
		return nil
	}
	return wire.TraceClientInterceptor(t.tp)
}

// flush sends the spans still held to the host; Shutdown calls it while the
// host connection is still open.
func (t *tracing) flush(ctx context.Context) error {
	if t == nil {
		return nil
	}
	return t.tp.ForceFlush(ctx)
}

// spanRelay is an OTLP client whose collector is the host.
type spanRelay struct {
	srv atomic.Pointer[server]
}

func (r *spanRelay) Start(context.Context) error { return nil }
func (r *spanRelay) Stop(context.Context) error  { return nil }

func (r *spanRelay) UploadTraces(ctx context.Context, spans []*tracepb.ResourceSpans) error {
	s := r.srv.Load()
	if s == nil {
		return errors.New("spans finished before the plugin served")
	}
	host, err := s.hostClient()
	if err != nil {
		return err
	}
	b, err := proto.Marshal(&coltracepb.ExportTraceServiceRequest{ResourceSpans: spans})
	if err != nil {
		return err
	}
	if _, err := host.ExportSpans(ctx, &pb.ExportSpansRequest{Otlp: b}); err != nil {
		return hostError(ctx, err)
	}
	return nil
}
