package mcpserver_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/mcpserver"
)

// rawClient opens MCP sessions with bare HTTP requests, as a flood would:
// it keeps nothing but each session's id.
type rawClient struct {
	endpoint string
	http     *http.Client
}

func newRawClient(endpoint string) *rawClient {
	return &rawClient{endpoint: endpoint, http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}, Timeout: 30 * time.Second}}
}

func (c *rawClient) close() { c.http.CloseIdleConnections() }

func (c *rawClient) post(session, body string) (*http.Response, error) {
	req, err := http.NewRequest(http.MethodPost, c.endpoint, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp, nil
}

// initialize opens a session and returns its id, or the HTTP status of a
// refusal.
func (c *rawClient) initialize() (string, int, error) {
	resp, err := c.post("", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`)
	if err != nil {
		return "", 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return "", resp.StatusCode, nil
	}
	id := resp.Header.Get("Mcp-Session-Id")
	if id == "" {
		return "", resp.StatusCode, errors.New("initialize: no session id")
	}
	// The client's half of the handshake, as a real client sends it.
	if _, err := c.post(id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		return "", 0, err
	}
	return id, http.StatusOK, nil
}

// ping sends a request on a session and returns the HTTP status.
func (c *rawClient) ping(id string) (int, error) {
	resp, err := c.post(id, `{"jsonrpc":"2.0","id":2,"method":"ping"}`)
	if err != nil {
		return 0, err
	}
	return resp.StatusCode, nil
}

// TestAttackSessionFlood opens many times the session cap from several
// clients at once, as a flood of initialize calls would: the server never
// keeps more sessions than the cap (plus those still being opened), closes
// the idle ones oldest first (their next request gets 404), and a client
// that comes afterwards is served.
func TestAttackSessionFlood(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	const maxSessions, flooders, perFlooder = 8, 4, 50
	f := newFixtureWith(t, 5*time.Second, mcpserver.Options{MaxSessions: maxSessions})
	endpoint := serveHTTP(t, f.srv)
	raw := newRawClient(endpoint)
	defer raw.close()

	first, code, err := raw.initialize()
	if err != nil || code != http.StatusOK {
		t.Fatalf("initialize: %d %v", code, err)
	}
	heapBefore := heapInUse()

	var peak atomic.Int64
	stop := make(chan struct{})
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		for {
			if n := int64(f.srv.Sessions()); n > peak.Load() {
				peak.Store(n)
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	var wg sync.WaitGroup
	var opened atomic.Int64
	for range flooders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range perFlooder {
				_, code, err := raw.initialize()
				if err != nil {
					t.Errorf("initialize: %v", err)
					return
				}
				if code == http.StatusOK {
					opened.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	close(stop)
	<-sampled
	heapAfter := heapInUse()
	t.Logf("%d sessions opened; at most %d at once; heap %+d KiB", opened.Load(), peak.Load(), (heapAfter-heapBefore)/1024)

	// An evicted session leaves the SDK's list once its connection has
	// closed, a moment after the eviction.
	eventually(t, fmt.Sprintf("at most %d sessions after the flood", maxSessions), func() bool { return f.srv.Sessions() <= maxSessions })
	// Each flooder may be opening one more while the cap trims.
	if p := peak.Load(); p > maxSessions+flooders {
		t.Errorf("%d sessions at once during the flood, over the cap of %d (+%d being opened)", p, maxSessions, flooders)
	}
	if opened.Load() != flooders*perFlooder {
		t.Errorf("%d of %d idle-evicting initializes succeeded", opened.Load(), flooders*perFlooder)
	}
	if code, err := raw.ping(first); err != nil || code != http.StatusNotFound {
		t.Errorf("the oldest idle session: ping = %d %v, want 404 (evicted)", code, err)
	}

	cs := connectHTTP(t, ctx, f.srv, newClient(nil), "2025-11-25")
	if r := call(t, ctx, cs, "echo", `{"text":"after the flood"}`); r.IsError || text(r) != "after the flood" {
		t.Errorf("a call after the flood: %v %q", r.IsError, text(r))
	}
}

// TestAttackSessionFloodSparesBusy floods while every session has a call
// in flight: no busy session is closed (its call goes on), and the flood is
// refused with 503 until a session is idle again.
func TestAttackSessionFloodSparesBusy(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	const maxSessions = 2
	f := newFixtureWith(t, 5*time.Second, mcpserver.Options{MaxSessions: maxSessions})
	var sessions []*mcp.ClientSession
	for range maxSessions {
		sessions = append(sessions, connectHTTP(t, ctx, f.srv, newClient(nil), "2025-11-25"))
	}
	endpoint, _ := endpoints.Load(f.srv)
	raw := newRawClient(endpoint.(string))
	defer raw.close()

	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, maxSessions)
	for _, cs := range sessions {
		go func() {
			_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
			errs <- err
		}()
		<-f.demo.started
	}
	for range 20 {
		_, code, err := raw.initialize()
		if err != nil {
			t.Fatalf("initialize: %v", err)
		}
		if code != http.StatusServiceUnavailable {
			t.Fatalf("initialize with every session busy = %d, want 503", code)
		}
	}
	select {
	case <-f.demo.cancelled:
		t.Fatal("a busy session's call was cancelled by the flood")
	default:
	}
	cancel()
	for range maxSessions {
		if err := <-errs; !errors.Is(err, context.Canceled) {
			t.Errorf("call: %v, want context.Canceled", err)
		}
		<-f.demo.cancelled
	}
	// Idle again: a new session evicts the one idle longest.
	eventually(t, "a session to be opened once one is idle", func() bool {
		_, code, err := raw.initialize()
		return err == nil && code == http.StatusOK
	})
}

// TestSessionIdleTimeout leaves a session without requests: it is closed
// once the idle timeout passes.
func TestSessionIdleTimeout(t *testing.T) {
	leakCheck(t)
	f := newFixtureWith(t, 5*time.Second, mcpserver.Options{SessionIdle: 100 * time.Millisecond})
	raw := newRawClient(serveHTTP(t, f.srv))
	defer raw.close()
	id, code, err := raw.initialize()
	if err != nil || code != http.StatusOK {
		t.Fatalf("initialize: %d %v", code, err)
	}
	eventually(t, "the idle session to be closed", func() bool { return f.srv.Sessions() == 0 })
	if code, err := raw.ping(id); err != nil || code != http.StatusNotFound {
		t.Errorf("ping after the idle timeout = %d %v, want 404", code, err)
	}
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkit.WaitFor(t, 20*time.Second, what, cond)
}

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	heap, _ := memInUse()
	return heap
}

// memInUse is the live heap after a collection, and the goroutine stacks.
func memInUse() (heap, stacks int64) {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc), int64(ms.StackInuse)
}

// BenchmarkIdleSessionMemory opens b.N idle streamable HTTP sessions (an
// initialize and its initialized notification each) and reports the live
// heap, the goroutine stacks and the goroutines each one holds in the
// server, which is what mcp_max_sessions bounds.
func BenchmarkIdleSessionMemory(b *testing.B) {
	f := newFixtureWith(b, 5*time.Second, mcpserver.Options{MaxSessions: 1 << 30, SessionIdle: time.Hour})
	raw := newRawClient(serveHTTP(b, f.srv))
	defer raw.close()
	// One session first, so that what is made once is not counted.
	if _, _, err := raw.initialize(); err != nil {
		b.Fatal(err)
	}
	ids := make([]string, 0, b.N)
	before, stacks := memInUse()
	goroutines := runtime.NumGoroutine()
	b.ResetTimer()
	for range b.N {
		id, code, err := raw.initialize()
		if err != nil || code != http.StatusOK {
			b.Fatalf("initialize: %d %v", code, err)
		}
		ids = append(ids, id)
	}
	b.StopTimer()
	raw.close()
	after, stacksAfter := memInUse()
	if got := f.srv.Sessions(); got != b.N+1 {
		b.Fatalf("%d sessions, want %d", got, b.N+1)
	}
	b.ReportMetric(float64(after-before)/float64(b.N), "heap-B/session")
	b.ReportMetric(float64(stacksAfter-stacks)/float64(b.N), "stack-B/session")
	b.ReportMetric(float64(runtime.NumGoroutine()-goroutines)/float64(b.N), "goroutines/session")
	runtime.KeepAlive(ids)
}
