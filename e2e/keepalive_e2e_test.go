package e2e

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPHTTPClientKeepsConnection: through the real host on loopback
// without mcp_auth (each new connection's client looked up and vetted), a
// Go MCP client that ends each call's context once it has the answer, as
// a caller with a per-call timeout does, makes a hundred calls on the
// connections it opened for its first: the host sends each answer with
// the end of its stream, so the client's drain of the stream is done
// before the context ends (mcpserver/endflush.go). Before, such a client
// opened a new connection every dozen calls or so.
func TestMCPHTTPClientKeepsConnection(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	config := deploymentFile(t, dir)
	addr := freeLoopbackAddr(t)
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	withMCP := strings.Replace(string(data), "host {\n", "host {\n  mcp = \""+addr+"\"\n", 1)
	if err := os.WriteFile(config, []byte(withMCP), 0o644); err != nil {
		t.Fatal(err)
	}
	running := startHost(t, config, len(shippedPlugins))

	var dials atomic.Int64
	dialer := &net.Dialer{Timeout: 10 * time.Second}
	tr := &http.Transport{
		MaxIdleConnsPerHost: 8,
		DialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			dials.Add(1)
			return dialer.DialContext(ctx, network, a)
		},
	}
	defer tr.CloseIdleConnections()
	client := mcp.NewClient(&mcp.Implementation{Name: "e2e-agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: tr}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to %s: %v\n%s", addr, err, running.stderr)
	}
	defer cs.Close()
	call := func() {
		t.Helper()
		cctx, ccancel := context.WithTimeout(ctx, 30*time.Second)
		defer ccancel() // ends the call's context once it has its answer
		r, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "search", Arguments: json.RawMessage(`{"q":"guard","limit":1}`)})
		if err != nil || r.IsError {
			t.Fatalf("search: %v %+v\n%s", err, r, running.stderr)
		}
	}
	call()
	before := dials.Load()
	const calls = 100
	for range calls {
		call()
	}
	n := dials.Load() - before
	t.Logf("%d connections for the session's first call, %d more for %d calls", before, n, calls)
	if n > 1 {
		t.Errorf("%d new connections for %d calls, each call's context ended once it had its answer; want the connection kept", n, calls)
	}
}
