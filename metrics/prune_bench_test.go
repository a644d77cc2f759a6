package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// BenchmarkUnloadManyTools: a plugin of 10,000 tools, more than
// MaxToolSeries of them called, is unloaded while the metrics prune the
// gone tools' series on every change of the tools point, as the host has
// them do. The scope's undo tells the watchers once, not once a tool.
func BenchmarkUnloadManyTools(b *testing.B) {
	const n = 10000
	for b.Loop() {
		b.StopTimer()
		k := kernel.New(hclog.NewNullLogger())
		var tools *pipeline.Tools
		m := newMetrics(func() *pipeline.Tools { return tools })
		tools = pipeline.New(k, pipeline.Options{OnCall: m.Call, OnApproval: m.Approval})
		cancel := k.Points().Watch(pipeline.PointTools, func() {
			m.Prune(func(name string) bool { _, ok := tools.Lookup(name); return ok })
		})
		many := kernel.Plugin{Name: "bridge", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			batch := make([]pipeline.Tool, n)
			for i := range batch {
				batch[i] = pipeline.Tool{ToolDescriptor: wire.ToolDescriptor{Name: fmt.Sprintf("t%d", i), Description: "x"},
					Execute: func(context.Context, *pipeline.Execution) (any, error) { return 1.0, nil }}
			}
			_, _, err = reg.RegisterTools(nil, batch)
			return err
		}}
		if _, err := k.Load(tools.Plugin()); err != nil {
			b.Fatal(err)
		}
		if _, err := k.Load(many); err != nil {
			b.Fatal(err)
		}
		for i := range 1200 {
			if r := tools.Execute(context.Background(), fmt.Sprintf("t%d", i), json.RawMessage(`{}`), "test"); !r.OK {
				b.Fatalf("t%d: %+v", i, r)
			}
		}
		b.StartTimer()
		if err := k.Unload("bridge"); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cancel()
		k.Close()
		tools.Close()
		b.StartTimer()
	}
}
