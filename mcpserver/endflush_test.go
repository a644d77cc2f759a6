package mcpserver_test

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/mcpserver"
)

// recordingListener counts the connections it accepts and keeps every
// write made on them, each as the server made it.
type recordingListener struct {
	net.Listener
	accepted atomic.Int64
	mu       sync.Mutex
	writes   [][]byte
}

func (l *recordingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err == nil {
		l.accepted.Add(1)
		c = &recordingConn{Conn: c, l: l}
	}
	return c, err
}

func (l *recordingListener) written() [][]byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([][]byte(nil), l.writes...)
}

type recordingConn struct {
	net.Conn
	l *recordingListener
}

func (c *recordingConn) Write(p []byte) (int, error) {
	c.l.mu.Lock()
	c.l.writes = append(c.l.writes, bytes.Clone(p))
	c.l.mu.Unlock()
	return c.Conn.Write(p)
}

// serveRecorded serves srv's streamable HTTP on a recording listener until
// the test ends.
func serveRecorded(t *testing.T, srv *mcpserver.Server) (*recordingListener, string) {
	t.Helper()
	ln, err := mcpserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	rec := &recordingListener{Listener: ln}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(rec) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return rec, "http://" + ln.Addr().(*net.TCPAddr).String() + mcpserver.Path
}

// TestCallAnswerEndsItsStream: a tools/call answered as server-sent events
// leaves the server in one write with the end of the stream (the empty
// last chunk), in both protocol eras, so that a client that reads the
// answer and then stops finds the stream already ended and keeps the
// connection. Before, the answer was flushed alone and the end followed in
// a write of its own.
func TestCallAnswerEndsItsStream(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			leakCheck(t)
			ctx := testkit.Context(t)
			f := newFixture(t, time.Minute)
			rec, endpoint := serveRecorded(t, f.srv)
			tr := &http.Transport{MaxIdleConnsPerHost: 8}
			t.Cleanup(tr.CloseIdleConnections)
			c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr}},
				&mcp.ClientSessionOptions{ProtocolVersion: version})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			const marker = "answer-ends-its-stream"
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": marker}})
			if err != nil || res.IsError {
				t.Fatalf("echo: %v %+v", err, res)
			}
			var answer []byte
			for _, w := range rec.written() {
				if bytes.Contains(w, []byte(marker)) && bytes.Contains(w, []byte(`"result"`)) {
					answer = w
				}
			}
			if answer == nil {
				t.Fatalf("no write of the server holds the answer")
			}
			if !bytes.Contains(answer, []byte("event: message")) {
				t.Fatalf("the answer is not a server-sent event; the write was:\n%q", answer)
			}
			if !endsResponse(answer) {
				t.Errorf("the answer left without the stream's end; the write was:\n%q", answer)
			}
		})
	}
}

// endsResponse reports whether w, a write of the server, ends an HTTP
// response: with its last chunk, or as a whole response whose
// Content-Length its body fills.
func endsResponse(w []byte) bool {
	if bytes.HasSuffix(w, []byte("\r\n0\r\n\r\n")) {
		return true
	}
	head, body, ok := bytes.Cut(w, []byte("\r\n\r\n"))
	if !ok || !bytes.HasPrefix(head, []byte("HTTP/1.1 ")) {
		return false
	}
	for line := range bytes.Lines(head) {
		if v, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("Content-Length: ")); ok {
			n, err := strconv.Atoi(string(v))
			return err == nil && n == len(body)
		}
	}
	return false
}

// TestHTTPClientKeepsConnections: a Go MCP client with idle connections
// enough for its calls in flight makes its calls on the connections it
// opened: 16 sessions calling one after another open a connection or two
// each (the session's own stream before 2026-07-28), not one every few
// calls.
func TestHTTPClientKeepsConnections(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	f := newFixture(t, time.Minute)
	rec, endpoint := serveRecorded(t, f.srv)
	const sessions, calls = 16, 40
	tr := &http.Transport{MaxIdleConnsPerHost: 2*sessions + 2}
	t.Cleanup(tr.CloseIdleConnections)
	var wg sync.WaitGroup
	for range sessions {
		wg.Go(func() {
			c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr}},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Error(err)
				return
			}
			defer cs.Close()
			for range calls {
				if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}}); err != nil || res.IsError {
					t.Errorf("echo: %v %+v", err, res)
					return
				}
			}
		})
	}
	wg.Wait()
	n := rec.accepted.Load()
	t.Logf("%d connections for %d sessions of %d calls", n, sessions, calls)
	// Each session holds its own stream (a GET) and a connection for its
	// calls; a few more come from sessions starting together.
	if n > 3*sessions {
		t.Errorf("%d connections opened for %d sessions of %d calls each; want them kept", n, sessions, calls)
	}
}

// BenchmarkHTTPCallCancelled: calls over streamable HTTP from a Go MCP
// client that ends each call's context once it has the answer, as a
// caller with a per-call timeout does; reported as new connections per
// 100 calls. "flushed" is the server flushing the answer on its own and
// the stream's end after it (as before endTogether); "together" sends them
// in one write.
func BenchmarkHTTPCallCancelled(b *testing.B) {
	for _, mode := range []string{"flushed", "together"} {
		b.Run(mode, func(b *testing.B) {
			mcpserver.FlushEachEvent(mode == "flushed")
			defer mcpserver.FlushEachEvent(false)
			f := newFixture(b, time.Minute)
			ln, err := mcpserver.Listen("127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			rec := &recordingListener{Listener: ln}
			served := make(chan error, 1)
			go func() { served <- f.srv.Serve(rec) }()
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				_ = f.srv.Shutdown(ctx)
				<-served
			}()
			endpoint := "http://" + ln.Addr().String() + mcpserver.Path
			tr := &http.Transport{MaxIdleConnsPerHost: 8}
			defer tr.CloseIdleConnections()
			c := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
			cs, err := c.Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: tr}},
				&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			before := rec.accepted.Load()
			for b.Loop() {
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "x"}})
				cancel()
				if err != nil || res.IsError {
					b.Fatalf("echo: %v %+v", err, res)
				}
			}
			b.ReportMetric(100*float64(rec.accepted.Load()-before)/float64(b.N), "conns/100calls")
		})
	}
}
