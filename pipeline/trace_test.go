package pipeline_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/plugkit-go/plugkit/pipeline"
)

// traced is a pipeline whose spans go to the returned recorder, with the
// add tool, a guard that denies b = 8675309, and a tool that makes a span of its
// own.
func traced(t *testing.T) (*pipeline.Tools, *tracetest.SpanRecorder) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	k, tools := newTools(t, pipeline.Options{Tracer: tp.Tracer("test")})
	own := tool("own", func(ctx context.Context, e *pipeline.Execution) (any, error) {
		_, span := tp.Tracer("tool").Start(ctx, "inside the tool")
		span.End()
		return "ok", nil
	})
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool(), own}}.plugin(),
		fakePlugin{name: "G", guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
			if strings.Contains(e.ArgumentsJSON(), `"b":8675309`) {
				return "no thirteens", nil
			}
			return "", nil
		}}.plugin(),
	)
	return tools, rec
}

// tree is the recorder's spans as "parent > child" lines, by name, for one
// trace; it fails the test when the spans are not all of one trace.
func tree(t *testing.T, spans []sdktrace.ReadOnlySpan) []string {
	t.Helper()
	names := map[[8]byte]string{}
	for _, s := range spans {
		names[s.SpanContext().SpanID()] = s.Name()
		if s.SpanContext().TraceID() != spans[0].SpanContext().TraceID() {
			t.Errorf("span %q is in trace %s, not %s", s.Name(), s.SpanContext().TraceID(), spans[0].SpanContext().TraceID())
		}
	}
	var lines []string
	for _, s := range spans {
		parent := "(root)"
		if s.Parent().IsValid() {
			parent = names[s.Parent().SpanID()]
		}
		lines = append(lines, parent+" > "+s.Name())
	}
	slices.Sort(lines)
	return lines
}

// wantTree fails t unless spans make the tree want (as tree writes it).
func wantTree(t *testing.T, spans []sdktrace.ReadOnlySpan, want ...string) {
	t.Helper()
	if got := tree(t, spans); !slices.Equal(got, want) {
		t.Errorf("span tree:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func attrs(s sdktrace.ReadOnlySpan) map[attribute.Key]string {
	m := map[attribute.Key]string{}
	for _, kv := range s.Attributes() {
		m[kv.Key] = kv.Value.String()
	}
	return m
}

func callSpan(t *testing.T, spans []sdktrace.ReadOnlySpan) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if s.Name() == pipeline.CallSpanName {
			return s
		}
	}
	t.Fatalf("no call span among %d", len(spans))
	return nil
}

// TestCallSpanTree: one span per call, a child per stage, and what runs in
// a stage (here the tool's own span) is that stage's child.
func TestCallSpanTree(t *testing.T) {
	tools, rec := traced(t)
	if r := tools.Execute(context.Background(), "own", json.RawMessage(`{}`), "client#1"); !r.OK {
		t.Fatal(r.Error)
	}
	spans := rec.Ended()
	wantTree(t, spans,
		"(root) > plugkit call",
		"plugkit call > stage 0 lookup",
		"plugkit call > stage 1 pre-execute",
		"plugkit call > stage 2 guards",
		"plugkit call > stage 3 execute",
		"plugkit call > stage 4 post-execute",
		"plugkit call > stage 5 result",
		"stage 3 execute > inside the tool",
	)
	call := callSpan(t, spans)
	a := attrs(call)
	if a[pipeline.AttrTool] != "own" || a[pipeline.AttrCaller] != "client#1" || a[pipeline.AttrCode] != "ok" || a[pipeline.AttrCallID] == "" {
		t.Errorf("call span attributes = %v", a)
	}
	if call.Status().Code == codes.Error {
		t.Errorf("an ok call's span has status %v", call.Status())
	}
}

// TestDeniedCallSpan: a denial ends the spans at the stage that denied; the
// call span carries the code and who decided, and never the arguments.
func TestDeniedCallSpan(t *testing.T) {
	tools, rec := traced(t)
	r := tools.Execute(context.Background(), "add", json.RawMessage(`{"a":1,"b":8675309}`), "c")
	if r.Code() != pipeline.CodeDenied {
		t.Fatalf("result = %+v, want DENIED", r)
	}
	spans := rec.Ended()
	wantTree(t, spans,
		"(root) > plugkit call",
		"plugkit call > stage 0 lookup",
		"plugkit call > stage 1 pre-execute",
		"plugkit call > stage 2 guards",
		"plugkit call > stage 5 result",
	)
	call := callSpan(t, spans)
	if a := attrs(call); a[pipeline.AttrCode] != "DENIED" || a[pipeline.AttrDecidedBy] != "G" {
		t.Errorf("call span attributes = %v", a)
	}
	if st := call.Status(); st.Code != codes.Error || st.Description != "DENIED" {
		t.Errorf("status = %+v, want Error DENIED", st)
	}
	for _, s := range spans {
		for _, kv := range s.Attributes() {
			if strings.Contains(kv.Value.String(), "8675309") {
				t.Errorf("span %q attribute %s = %q carries the arguments", s.Name(), kv.Key, kv.Value.String())
			}
		}
		for _, ev := range s.Events() {
			t.Errorf("span %q has event %q", s.Name(), ev.Name)
		}
	}
}

// TestStageTimes: OnCall is told of every call once, with a time for each
// stage the call reached and none for the others.
func TestStageTimes(t *testing.T) {
	type seen struct {
		tool    string
		code    pipeline.Code
		reached []pipeline.Stage
	}
	var got []seen
	k, tools := newTools(t, pipeline.Options{StageSample: 1, OnCall: func(e *pipeline.Execution, r pipeline.Result, times pipeline.StageTimes) {
		s := seen{tool: e.Name(), code: r.Code()}
		for st, d := range times {
			if d >= 0 {
				s.reached = append(s.reached, pipeline.Stage(st))
			}
		}
		got = append(got, s)
	}})
	load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin())
	ctx := context.Background()
	tools.Execute(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), "c")
	tools.Execute(ctx, "add", json.RawMessage(`{"a":"x"}`), "c")
	all := []pipeline.Stage{0, 1, 2, 3, 4, 5}
	want := []seen{
		{"add", "", all},
		{"add", pipeline.CodeInvalidArguments, []pipeline.Stage{pipeline.StageLookup, pipeline.StageResult}},
	}
	if len(got) != len(want) {
		t.Fatalf("OnCall saw %d calls, want %d", len(got), len(want))
	}
	for i := range want {
		if got[i].tool != want[i].tool || got[i].code != want[i].code || !slices.Equal(got[i].reached, want[i].reached) {
			t.Errorf("call %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}

// TestSampledOutCall: a call the sampler leaves out records no span, not
// even its stages', and its result is what it would be untraced.
func TestSampledOutCall(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithSampler(sdktrace.NeverSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	k, tools := newTools(t, pipeline.Options{Tracer: tp.Tracer("test")})
	load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin())
	if r := tools.Execute(context.Background(), "add", json.RawMessage(`{"a":1,"b":2}`), "c"); !r.OK {
		t.Fatal(r.Error)
	}
	if n := len(rec.Started()); n != 0 {
		t.Errorf("%d spans recorded for a call sampled out", n)
	}
}
