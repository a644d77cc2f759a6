package mcpserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/mcpserver"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// tools/list at 10,000 tools, every page of it over a pair of OS pipes,
// for one principal: the per-principal list (through this server, its
// visible set cached) against the SDK's own list of the same tools, which
// is what this server answered before lists were per principal. The two
// run in the same process and on the same machine; compare them as a
// ratio:
//
//	go test -run '^$' -bench ToolsList10k -benchmem ./mcpserver/

const benchTools = 10_000

func manyTools() []pipeline.Tool {
	ts := make([]pipeline.Tool, benchTools)
	for i := range ts {
		ts[i] = pipeline.Tool{
			ToolDescriptor: wire.ToolDescriptor{
				Name: fmt.Sprintf("tool_%05d", i), Description: fmt.Sprintf("Tool number %d of the benchmark catalogue.", i),
				Parameters: json.RawMessage(`{"type":"object","properties":{"q":{"type":"string"}}}`),
			},
			Execute: func(context.Context, *pipeline.Execution) (any, error) { return "ok", nil },
		}
	}
	return ts
}

func listAll(b *testing.B, ctx context.Context, cs *mcp.ClientSession) int {
	n := 0
	for _, err := range cs.Tools(ctx, nil) {
		if err != nil {
			b.Fatal(err)
		}
		n++
	}
	return n
}

// cpuTime is the process's CPU time so far (user and system): on a
// machine shared with other work, wall time says more about the neighbours
// than about this code, so the benchmark reports CPU time per list too.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// loopCPU runs list b.N times and reports its CPU time per list.
func loopCPU(b *testing.B, list func()) {
	b.ReportAllocs()
	b.ResetTimer()
	start := cpuTime()
	n := 0
	for b.Loop() {
		list()
		n++
	}
	b.ReportMetric(float64(cpuTime()-start)/float64(n), "cpu-ns/op")
}

func BenchmarkToolsList10k(b *testing.B) {
	ctx := context.Background()
	b.Run("sdk-baseline", func(b *testing.B) {
		srv := mcp.NewServer(&mcp.Implementation{Name: "baseline", Version: "1"}, nil)
		for _, t := range manyTools() {
			// The tool as this server describes it (annotations, owner).
			tool, err := mcpserver.MCPTool(pipeline.ToolInfo{ToolDescriptor: wire.ToolDescriptor{Name: t.Name, Description: t.Description, Parameters: t.Parameters, Owner: "many"}})
			if err != nil {
				b.Fatal(err)
			}
			srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		}
		cs := connectSDK(b, ctx, srv)
		loopCPU(b, func() {
			if n := listAll(b, ctx, cs); n != benchTools {
				b.Fatalf("%d tools", n)
			}
		})
	})
	for _, hide := range []int{0, benchTools / 2} {
		b.Run(fmt.Sprintf("per-principal-hiding-%d", hide), func(b *testing.B) {
			f := newFixture(b, 5*time.Second)
			hidden := make([]string, hide)
			for i := range hidden {
				hidden[i] = fmt.Sprintf("tool_%05d", i)
			}
			plugins := []kernel.Plugin{{Name: "many", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
				reg, _ := pipeline.RegistrarOf(s)
				_, errs, err := reg.RegisterTools(nil, manyTools())
				if err == nil && errs != nil {
					err = fmt.Errorf("%v", errs)
				}
				return err
			}}}
			if hide > 0 {
				plugins = append(plugins, hideFrom("rules", "*", hidden...))
			}
			for _, p := range plugins {
				if _, err := f.h.Kernel().Load(p); err != nil {
					b.Fatal(err)
				}
			}
			cs := connectStdio(b, ctx, f.srv, newClient(nil), "2025-11-25")
			want := benchTools - hide + 5 // and the fixture's five
			deadline := time.Now().Add(30 * time.Second)
			for listAll(b, ctx, cs) != want {
				if time.Now().After(deadline) {
					b.Fatalf("the server never listed %d tools", want)
				}
				time.Sleep(10 * time.Millisecond)
			}
			loopCPU(b, func() {
				if n := listAll(b, ctx, cs); n != want {
					b.Fatalf("%d tools, want %d", n, want)
				}
			})
		})
	}
}

// connectSDK connects a client to a plain SDK server over OS pipes.
func connectSDK(b *testing.B, ctx context.Context, srv *mcp.Server) *mcp.ClientSession {
	toServer, fromClient, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	toClient, fromServer, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	ss, err := srv.Connect(ctx, &mcp.IOTransport{Reader: toServer, Writer: fromServer}, nil)
	if err != nil {
		b.Fatal(err)
	}
	cs, err := newClient(nil).Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cs.Close()
		_ = ss.Wait()
	})
	return cs
}
