package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/metrics"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// TestToolSeriesBounded: a plugin that registers more tools than
// MaxToolSeries (a bridged server's thousands) gets series for the first
// MaxToolSeries of them called and tool="other" for the rest; when the
// plugin goes, every series of its tools goes with it (the host prunes on
// every registry change, as here).
func TestToolSeriesBounded(t *testing.T) {
	k := kernel.New(hclog.NewNullLogger())
	var tools *pipeline.Tools
	m := newMetrics(func() *pipeline.Tools { return tools })
	tools = pipeline.New(k, pipeline.Options{OnCall: m.Call})
	t.Cleanup(func() { k.Close(); tools.Close() })
	cancel := k.Points().Watch(pipeline.PointTools, func() {
		m.Prune(func(name string) bool { _, ok := tools.Lookup(name); return ok })
	})
	defer cancel()
	const n = metrics.MaxToolSeries + 50
	many := kernel.Plugin{Name: "bridge", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
		reg, err := pipeline.RegistrarOf(s)
		if err != nil {
			return err
		}
		for i := range n {
			if _, err := reg.Register(pipeline.Tool{
				ToolDescriptor: wire.ToolDescriptor{
					Name: fmt.Sprintf("t%d", i), Description: "x",
				},
				Execute: func(context.Context, *pipeline.Execution) (any, error) { return 1.0, nil },
			}); err != nil {
				return err
			}
		}
		return nil
	}}
	if _, err := k.Load(tools.Plugin()); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Load(many); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range n {
		if r := tools.Execute(ctx, fmt.Sprintf("t%d", i), json.RawMessage(`{}`), "test"); !r.OK {
			t.Fatalf("t%d: %+v", i, r)
		}
	}
	if got := testutil.CollectAndCount(m.Registry(), "plugkit_calls_total"); got != metrics.MaxToolSeries+1 {
		t.Errorf("%d series of plugkit_calls_total, want %d and one for other", got, metrics.MaxToolSeries)
	}
	if got := callsOf(t, m, metrics.OtherTool); got != 50 {
		t.Errorf("calls counted as other: %v, want 50", got)
	}
	if err := k.Unload("bridge"); err != nil {
		t.Fatal(err)
	}
	if got := testutil.CollectAndCount(m.Registry(), "plugkit_call_duration_seconds"); got != 1 {
		t.Errorf("%d latency series after the tools went, want only other's", got)
	}
	if got := testutil.CollectAndCount(m.Registry(), "plugkit_calls_total"); got != 1 {
		t.Errorf("%d call series after the tools went, want only other's", got)
	}
}

// callsOf sums plugkit_calls_total of tool.
func callsOf(t *testing.T, m *metrics.Metrics, tool string) float64 {
	fams, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, f := range fams {
		if f.GetName() != "plugkit_calls_total" {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, l := range mt.GetLabel() {
				if l.GetName() == "tool" && l.GetValue() == tool {
					sum += mt.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}
