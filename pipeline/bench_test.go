package pipeline_test

import (
	"context"
	"encoding/json"
	"sync/atomic"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/plugkit-go/plugkit/pipeline"
)

// benchArgs are the arguments of every benchmarked call, already canonical.
const benchArgs = `{"a":2,"b":3}`

// BenchmarkDirectCall is the add tool's body called directly: the floor the
// pipeline's overhead is measured against.
func BenchmarkDirectCall(b *testing.B) {
	ctx := context.Background()
	info := addTool().Info("P")
	e := pipeline.NewExecution("id", "add", "client", &info, benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		v, err := addBody(ctx, e)
		if err != nil || v.(float64) != 5 {
			b.Fatalf("add = %v, %v", v, err)
		}
	}
}

// BenchmarkPipelineInHost is the same body through Tools.Execute with one
// in-host listener on each of stages 1 to 5 and one guard, all passing.
func BenchmarkPipelineInHost(b *testing.B) { benchInHost(b, pipeline.Options{}) }

// BenchmarkPipelineInHostTraced is PipelineInHost with every call traced:
// a span for the call and one per stage, batched to an exporter that drops
// them.
func BenchmarkPipelineInHostTraced(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	benchInHost(b, pipeline.Options{Tracer: tp.Tracer("bench")})
}

func benchInHost(b *testing.B, opts pipeline.Options) {
	ctx := context.Background()
	k, tools := newTools(b, opts)
	var observed atomic.Int64
	load(b, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
		fakePlugin{
			name: "listeners",
			pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				return next(ctx), nil
			},
			guard: func(ctx context.Context, e *pipeline.Execution) (string, error) { return "", nil },
			exec: func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
				return next(ctx)
			},
			post: func(ctx context.Context, e *pipeline.Execution, r pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
				return next(ctx), nil
			},
			result: func(ctx context.Context, e *pipeline.Execution, r pipeline.Result) error {
				observed.Add(1)
				return nil
			},
		}.plugin(),
	)
	args := json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		r := tools.Execute(ctx, "add", args, "client")
		if !r.OK || r.Value.(float64) != 5 {
			b.Fatalf("add = %+v", r)
		}
	}
	if observed.Load() == 0 {
		b.Fatal("stage 5 saw nothing")
	}
}

// BenchmarkPipelineNoListeners is the same call through Tools.Execute with
// no listener at all: stage 0 and the pipeline's fixed cost.
func BenchmarkPipelineNoListeners(b *testing.B) {
	ctx := context.Background()
	k, tools := newTools(b, pipeline.Options{})
	load(b, k, fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin())
	args := json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		if r := tools.Execute(ctx, "add", args, "client"); !r.OK {
			b.Fatalf("add = %+v", r)
		}
	}
}
