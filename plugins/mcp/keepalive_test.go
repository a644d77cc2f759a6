package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/mcptestserver"
)

// TestBridgeKeepsConnections: calls in parallel on one bridged HTTP server
// reuse the connections they opened, rather than opening new ones: not
// dropped by net/http's default of 2 idle connections per host, nor by a
// call's context cancelled while the SDK drains its answer's stream
// (linger.go); and closing the bridge closes them.
func TestBridgeKeepsConnections(t *testing.T) {
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
	srv := mcptestserver.New(io.Discard)
	var opened atomic.Int64
	hs := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil))
	hs.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			opened.Add(1)
		}
	}
	hs.Start()
	t.Cleanup(hs.Close)

	set, err := check(Config{URL: hs.URL, Prefix: strPtr("")})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b := newBridge(set, hclog.NewNullLogger(), newFakeHost().batch, func(error) {})
	if err := b.start(ctx); err != nil {
		t.Fatal(err)
	}
	const parallel = 16
	round := func(each int) {
		var wg sync.WaitGroup
		for range parallel {
			wg.Go(func() {
				for range each {
					if _, err := b.call(ctx, "echo", []byte(`{"message":"x"}`)); err != nil {
						t.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
	}
	// The first round opens a connection for each call in flight; the
	// second finds them idle. With net/http's default the second opened
	// ≈1 connection for every 3 calls.
	round(10)
	before := opened.Load()
	round(40)
	t.Logf("%d connections opened by the first round, %d by the second", before, opened.Load()-before)
	if n := opened.Load() - before; n > 8 {
		t.Errorf("%d connections opened for %d more calls, %d at a time (%d opened before); want them reused", n, parallel*40, parallel, before)
	}
	b.close()
	hs.CloseClientConnections()
}
