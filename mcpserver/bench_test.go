package mcpserver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/admin"
)

// The three ways a client reaches the same trivial tool (echo, through the
// whole pipeline with the fixture's policy and audit observer), side by
// side: a direct call of the pipeline, the admin API that `host call` uses
// (HTTP over the Unix socket), and MCP tools/call over a pair of OS pipes
// as `host mcp` is used. Run with
//
//	go test -run '^$' -bench . -benchmem ./mcpserver/

var benchArgs = json.RawMessage(`{"text":"hello"}`)

func BenchmarkDirectPipelineCall(b *testing.B) {
	f := newFixture(b, 5*time.Second)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if r := f.h.Call(ctx, "echo", benchArgs, "bench"); !r.OK {
			b.Fatal(r.Error)
		}
	}
}

func BenchmarkAdminCall(b *testing.B) {
	f := newFixture(b, 5*time.Second)
	ctx := context.Background()
	socket := filepath.Join(b.TempDir(), "admin.sock")
	ln, err := admin.Listen(socket)
	if err != nil {
		b.Fatal(err)
	}
	srv := admin.NewServer(admin.Controls{Host: f.h, Version: "bench"}, nil)
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	b.Cleanup(func() {
		_ = srv.Shutdown(context.Background())
		<-served
	})
	c := admin.NewClient(socket)
	b.ReportAllocs()
	for b.Loop() {
		r, err := c.Call(ctx, "echo", benchArgs, nil)
		if err != nil || !r.OK {
			b.Fatal(err, r.Error)
		}
	}
}

// BenchmarkMCPStdioCall is a tools/call with the SDK's client, at its
// newest protocol and at the last legacy one, served by the stdio hot path
// (as `host mcp` serves) and by the SDK alone (/sdk), in one run; it fails
// if the hot path does not serve the client's calls.
func BenchmarkMCPStdioCall(b *testing.B) {
	for _, version := range []string{"2026-07-28", "2025-11-25"} {
		for _, c := range []struct {
			name string
			hot  bool
		}{{"hot-path", true}, {"sdk", false}} {
			b.Run(version+"/"+c.name, func(b *testing.B) {
				f := newFixture(b, 5*time.Second)
				ctx := context.Background()
				cs := connectStdioWith(b, ctx, f.srv, newClient(nil), version, c.hot)
				params := &mcp.CallToolParams{Name: "echo", Arguments: benchArgs}
				b.ReportAllocs()
				for b.Loop() {
					r, err := cs.CallTool(ctx, params)
					if err != nil || r.IsError {
						b.Fatal(err, r)
					}
				}
				b.StopTimer()
				if taken := f.srv.HotCalls() > 0; taken != c.hot {
					b.Fatalf("served by the hot path: %v, want %v", taken, c.hot)
				}
			})
		}
	}
}
