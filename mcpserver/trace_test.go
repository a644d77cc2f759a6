package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// TestClientTraceContext: the W3C trace context a client puts in a call's
// _meta is the parent of everything the call runs, so that a host that
// traces joins the client's trace; a call without one has none.
func TestClientTraceContext(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr transport) {
		ctx := testkit.Context(t)
		f := newFixture(t, 5*time.Second)
		seen := make(chan trace.SpanContext, 2)
		spy := kernel.Plugin{Name: "spy", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			_, err = reg.Guard(func(ctx context.Context, e *pipeline.Execution) (string, error) {
				seen <- trace.SpanContextFromContext(ctx)
				return "", nil
			}, "echo")
			return err
		}}
		if _, err := f.h.Kernel().Load(spy); err != nil {
			t.Fatal(err)
		}
		cs := tr.connect(t, ctx, f.srv, newClient(nil), tr.version)

		const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"},
			Meta: mcp.Meta{"traceparent": parent, "tracestate": "vendor=x"}})
		if err != nil || res.IsError {
			t.Fatalf("echo: %v %+v", err, res)
		}
		sc := <-seen
		if sc.TraceID().String() != "4bf92f3577b34da6a3ce929d0e0e4736" || sc.SpanID().String() != "00f067aa0ba902b7" ||
			!sc.IsSampled() || !sc.IsRemote() || sc.TraceState().Get("vendor") != "x" {
			t.Errorf("span context in the pipeline = %+v, want the client's %s", sc, parent)
		}

		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hi"}}); err != nil {
			t.Fatal(err)
		}
		if sc := <-seen; sc.IsValid() {
			t.Errorf("a call without a trace context runs in trace %s", sc.TraceID())
		}
	})
}
