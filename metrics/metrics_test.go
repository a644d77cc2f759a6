package metrics_test

import (
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/metrics"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// host is a kernel with the tools service and an add tool, whose calls m
// counts when it is not nil, timing the stages of one call in sample (0:
// the pipeline's default).
func host(t testing.TB, m *metrics.Metrics, sample uint64) *pipeline.Tools {
	k := kernel.New(hclog.NewNullLogger())
	opts := pipeline.Options{StageSample: sample}
	if m != nil {
		opts.OnCall = m.Call
	}
	tools := pipeline.New(k, opts)
	t.Cleanup(func() { k.Close(); tools.Close() })
	add := kernel.Plugin{Name: "P", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
		reg, err := pipeline.RegistrarOf(s)
		if err != nil {
			return err
		}
		_, err = reg.Register(pipeline.Tool{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "add", Description: "Adds.",
			},
			Execute: func(context.Context, *pipeline.Execution) (any, error) { return 5.0, nil },
		})
		return err
	}}
	for _, p := range []kernel.Plugin{tools.Plugin(), add} {
		if _, err := k.Load(p); err != nil {
			t.Fatal(err)
		}
	}
	return tools
}

// metered is a host whose calls a new Metrics counts, timing the stages of
// one call in sample.
func metered(t testing.TB, sample uint64) (*metrics.Metrics, *pipeline.Tools) {
	var tools *pipeline.Tools
	m := newMetrics(func() *pipeline.Tools { return tools })
	tools = host(t, m, sample)
	return m, tools
}

func newMetrics(tools func() *pipeline.Tools) *metrics.Metrics {
	return metrics.New("test", func() []remote.Status { return nil }, func() int64 {
		if t := tools(); t != nil {
			return t.InFlight()
		}
		return 0
	})
}

// TestCallsByToolAndCode: each result is counted once under its tool and
// code; every call of a tool that does not exist under one label.
func TestCallsByToolAndCode(t *testing.T) {
	m, tools := metered(t, 1)
	ctx := context.Background()
	for range 3 {
		tools.Execute(ctx, "add", json.RawMessage(`{}`), "c")
	}
	for _, name := range []string{"x", "y", "rm -rf /"} {
		tools.Execute(ctx, name, json.RawMessage(`{}`), "c")
	}
	want := `
# HELP plugkit_calls_total Calls the pipeline ended, by tool, outcome code ("ok" for a success) and the plugin that decided a denial or a block.
# TYPE plugkit_calls_total counter
plugkit_calls_total{code="UNKNOWN_TOOL",decided_by="",tool="(unknown)"} 3
plugkit_calls_total{code="ok",decided_by="",tool="add"} 3
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "plugkit_calls_total"); err != nil {
		t.Error(err)
	}
}

// BenchmarkPipelineMetrics is a call through the pipeline with metrics,
// stages timed as the host does (one call in pipeline.DefaultStageSample);
// BenchmarkPipelineMetricsEveryStage times every call's stages;
// BenchmarkPipelineNoMetrics is their baseline.
func BenchmarkPipelineMetrics(b *testing.B) {
	_, tools := metered(b, 0)
	benchCalls(b, tools)
}

func BenchmarkPipelineMetricsEveryStage(b *testing.B) {
	_, tools := metered(b, 1)
	benchCalls(b, tools)
}

func BenchmarkPipelineNoMetrics(b *testing.B) { benchCalls(b, host(b, nil, 0)) }

func benchCalls(b *testing.B, tools *pipeline.Tools) {
	ctx, args := context.Background(), json.RawMessage(`{}`)
	b.ReportAllocs()
	for b.Loop() {
		if r := tools.Execute(ctx, "add", args, "c"); !r.OK {
			b.Fatal(r.Error)
		}
	}
}

// TestStageDurations: each stage a call reaches is timed once; a call that
// ends at stage 0 (an unknown tool) is timed in lookup and result only.
func TestStageDurations(t *testing.T) {
	m, tools := metered(t, 1)
	ctx := context.Background()
	for range 3 {
		tools.Execute(ctx, "add", json.RawMessage(`{}`), "c")
	}
	tools.Execute(ctx, "nope", json.RawMessage(`{}`), "c")
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	for _, f := range families {
		if f.GetName() != "plugkit_stage_duration_seconds" {
			continue
		}
		for _, s := range f.GetMetric() {
			got[s.GetLabel()[0].GetValue()] = s.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{"lookup": 4, "pre-execute": 3, "guards": 3, "execute": 3, "post-execute": 3, "result": 4}
	if !maps.Equal(got, want) {
		t.Errorf("samples by stage = %v, want %v", got, want)
	}
}
