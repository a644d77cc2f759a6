package pipeline_test

import (
	"context"
	"encoding/json"
	"runtime"
	"strconv"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// manyTools returns n tools named t0 … t<n-1>, each with a schema of its own
// (an object with two typed properties, as most MCP tools have) and the add
// body.
func manyTools(n int, suffix string) []pipeline.Tool {
	out := make([]pipeline.Tool, n)
	for i := range out {
		name := "t" + strconv.Itoa(i)
		out[i] = pipeline.Tool{
			ToolDescriptor: wire.ToolDescriptor{
				Name: name, Description: "Tool " + name + suffix + ".",
				Parameters: json.RawMessage(`{"type":"object","properties":{"a":{"type":"number","description":"` + name +
					`"},"b":{"type":"number"}},"required":["a","b"]}`),
			},
			Execute: addBody,
		}
	}
	return out
}

// BenchmarkRegisterTools is one in-host plugin registering N tools one at
// a time in its apply step (Registrar.Register, as a plugin does), then one
// call, which is when the registry is compiled; then the plugin is unloaded.
// Linear registration makes N=8000 cost about 8× N=1000.
func BenchmarkRegisterTools(b *testing.B) {
	for _, n := range []int{1000, 8000} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			ctx := context.Background()
			k, tools := newTools(b, pipeline.Options{})
			list := manyTools(n, "")
			args := json.RawMessage(benchArgs)
			b.ReportAllocs()
			for b.Loop() {
				load(b, k, fakePlugin{name: "P", tools: list}.plugin())
				if r := tools.Execute(ctx, "t0", args, "bench"); !r.OK {
					b.Fatalf("call: %+v", r)
				}
				if err := k.Unload("P"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCallAmongTools is one call through the pipeline (a listener on
// each stage, one guard limited to a tool of its own) among N registered
// tools, each call to the next tool in turn: its cost should not depend on
// N.
func BenchmarkCallAmongTools(b *testing.B) {
	for _, n := range []int{10, 10000} {
		b.Run("N="+strconv.Itoa(n), func(b *testing.B) {
			ctx := context.Background()
			k, tools := newTools(b, pipeline.Options{})
			load(b, k,
				fakePlugin{name: "P", tools: manyTools(n, "")}.plugin(),
				listenersPlugin("listeners", nil),
				fakePlugin{name: "narrow", guard: func(context.Context, *pipeline.Execution) (string, error) { return "", nil }, only: []string{"t1"}}.plugin(),
			)
			args := json.RawMessage(benchArgs)
			names := make([]string, n)
			for i := range names {
				names[i] = "t" + strconv.Itoa(i)
			}
			// The first call compiles the registry: not part of a call's cost.
			if r := tools.Execute(ctx, "t0", args, "bench"); !r.OK {
				b.Fatalf("call: %+v", r)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if r := tools.Execute(ctx, names[i], args, "bench"); !r.OK {
					b.Fatalf("call: %+v", r)
				}
				if i++; i == n {
					i = 0
				}
			}
		})
	}
}

// listenersPlugin passes on every stage, for every tool or for only.
func listenersPlugin(name string, only []string) kernel.Plugin {
	return fakePlugin{
		name: name, only: only,
		pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			return next(ctx), nil
		},
		guard: func(context.Context, *pipeline.Execution) (string, error) { return "", nil },
		exec: func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
			return next(ctx)
		},
		post: func(ctx context.Context, e *pipeline.Execution, r pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
			return next(ctx), nil
		},
		result: func(context.Context, *pipeline.Execution, pipeline.Result) error { return nil },
	}.plugin()
}

// BenchmarkBridgeListChanged is the host's side of a bridged server's
// tools/list_changed among 1,000 tools, through the batch the bridge sends
// (Registrar.RegisterTools, as the host service runs it): one tool changed
// (the bridge's diff sends that one, replacing its registration) against
// the whole list re-registered, each followed by one call (which compiles
// the registry).
func BenchmarkBridgeListChanged(b *testing.B) {
	const n = 1000
	for _, sc := range []struct {
		name string
		all  bool
	}{{"one_changed", false}, {"all_reregistered", true}} {
		b.Run(sc.name, func(b *testing.B) {
			ctx := context.Background()
			k, tools := newTools(b, pipeline.Options{})
			var reg *pipeline.Registrar
			load(b, k, fakePlugin{name: "bridge", apply: func(r *pipeline.Registrar) error { reg = r; return nil }}.plugin())
			effects, errs, err := reg.RegisterTools(nil, manyTools(n, ""))
			if err != nil || errs != nil {
				b.Fatal(err, errs)
			}
			versions := [2][]pipeline.Tool{manyTools(n, " (v1)"), manyTools(n, " (v2)")}
			args := json.RawMessage(benchArgs)
			b.ReportAllocs()
			round := 0
			for b.Loop() {
				next := versions[round%2]
				round++
				if sc.all {
					effects, errs, err = reg.RegisterTools(effects, next)
				} else {
					var e []*kernel.Effect
					e, errs, err = reg.RegisterTools(effects[7:8], next[7:8])
					if err == nil && errs == nil {
						effects[7] = e[0]
					}
				}
				if err != nil || errs != nil {
					b.Fatal(err, errs)
				}
				if r := tools.Execute(ctx, "t7", args, "bench"); !r.OK {
					b.Fatalf("call: %+v", r)
				}
			}
		})
	}
}

// BenchmarkMemoryPerTool reports the heap the registry holds per
// registered tool beyond its name, description and schema text, as the
// metric bytes/tool (go test -run '^$' -bench MemoryPerTool ./pipeline/):
// a measure, so a benchmark, not a test that cannot fail. Each iteration
// registers 10,000 tools in a new host.
func BenchmarkMemoryPerTool(b *testing.B) {
	const n = 10000
	list := manyTools(n, "")
	schemaBytes := 0
	for _, tl := range list {
		schemaBytes += len(tl.Parameters) + len(tl.Description) + len(tl.Name)
	}
	heap := func() uint64 {
		runtime.GC()
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var total float64
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		// Not newTools: its cleanup would keep every iteration's host
		// alive until the benchmark ends.
		k := kernel.New(hclog.NewNullLogger())
		tools := pipeline.New(k, pipeline.Options{})
		if _, err := k.Load(tools.Plugin()); err != nil {
			b.Fatalf("load tools: %v", err)
		}
		before := heap()
		b.StartTimer()
		load(b, k, fakePlugin{name: "P", tools: list}.plugin())
		b.StopTimer()
		if _, ok := tools.Lookup("t0"); !ok {
			b.Fatal("t0 not registered")
		}
		total += (float64(heap()) - float64(before) - float64(schemaBytes)) / n
		k.Close()
		tools.Close()
		b.StartTimer()
	}
	b.ReportMetric(total/float64(b.N), "bytes/tool")
	runtime.KeepAlive(list)
}
