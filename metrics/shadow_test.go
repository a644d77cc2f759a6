package metrics_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// TestShadowDecisions: each decision of a listener in shadow is counted
// under its plugin, rule and would, and the rules a plugin names cannot
// grow the series past metrics.MaxShadowSeries.
func TestShadowDecisions(t *testing.T) {
	var tools *pipeline.Tools
	m := newMetrics(func() *pipeline.Tools { return tools })
	k := kernel.New(hclog.NewNullLogger())
	tools = pipeline.New(k, pipeline.Options{OnCall: m.Call})
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
	rules := kernel.Plugin{Name: "rules", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
		reg, err := pipeline.RegistrarOf(s)
		if err != nil {
			return err
		}
		_, err = reg.Guard(func(ctx context.Context, e *pipeline.Execution) (string, error) {
			var args struct{ Rule string }
			_ = e.Decode(&args)
			pipeline.NoteRule(ctx, args.Rule)
			return "no", nil
		})
		return err
	}}
	for _, p := range []kernel.Plugin{tools.Plugin(), add, rules} {
		if _, err := k.Load(p); err != nil {
			t.Fatal(err)
		}
	}
	if err := tools.SetShadow([]pipeline.ShadowRule{{Plugin: "rules"}}); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for range 2 {
		if r := tools.Execute(ctx, "add", json.RawMessage(`{"rule":"no_rm"}`), "c"); !r.OK {
			t.Fatal(r.Error)
		}
	}
	want := `
# HELP plugkit_shadow_decisions_total Decisions of listeners in shadow that were recorded and not applied, by plugin, rule ("" when the listener named none) and would (DENIED or ASK).
# TYPE plugkit_shadow_decisions_total counter
plugkit_shadow_decisions_total{plugin="rules",rule="no_rm",would="DENIED"} 2
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "plugkit_shadow_decisions_total"); err != nil {
		t.Error(err)
	}
	for i := range 300 {
		tools.Execute(ctx, "add", json.RawMessage(fmt.Sprintf(`{"rule":"r%d"}`, i)), "c")
	}
	n, err := testutil.GatherAndCount(m.Registry(), "plugkit_shadow_decisions_total")
	if err != nil {
		t.Fatal(err)
	}
	if n != 257 {
		t.Fatalf("%d series, want 256 and other", n)
	}
}
