package mcpserver_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// BenchmarkMCPHTTPCall is the same trivial call over streamable HTTP, by a
// client that keeps a session (2025-11-25) and by one that has none
// (2026-07-28, whose calls the HTTP hot path serves without a session;
// the SDK's stateless handler made one for each request). Compare the two in one run:
//
//	go test -run '^$' -bench MCPHTTPCall -benchmem ./mcpserver/
func BenchmarkMCPHTTPCall(b *testing.B) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		b.Run(version, func(b *testing.B) {
			f := newFixture(b, 5*time.Second)
			endpoint := serveHTTP(b, f.srv)
			ctx := context.Background()
			rt := &http.Transport{}
			b.Cleanup(rt.CloseIdleConnections)
			cs, err := newClient(nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: rt}},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = cs.Close() })
			if got := cs.InitializeResult().ProtocolVersion; got != version {
				b.Fatalf("negotiated %s, want %s", got, version)
			}
			params := &mcp.CallToolParams{Name: "echo", Arguments: benchArgs}
			before := f.srv.HotCalls()
			b.ReportAllocs()
			for b.Loop() {
				r, err := cs.CallTool(ctx, params)
				if err != nil || r.IsError {
					b.Fatal(err, r)
				}
			}
			// The Go SDK's client's calls of 2026-07-28 are what the HTTP
			// hot path takes; a session's are the SDK's.
			if hot := f.srv.HotCalls() - before; (hot > 0) != (version == "2026-07-28") {
				b.Fatalf("the HTTP hot path served %d calls", hot)
			}
		})
	}
}
