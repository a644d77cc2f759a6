package httplimit_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/httplimit"
)

// counting counts the connections a server holds open, and the most it
// ever held at once.
type counting struct {
	net.Listener
	open, peak atomic.Int64
}

func (c *counting) Accept() (net.Conn, error) {
	conn, err := c.Listener.Accept()
	if err != nil {
		return nil, err
	}
	n := c.open.Add(1)
	for {
		p := c.peak.Load()
		if n <= p || c.peak.CompareAndSwap(p, n) {
			break
		}
	}
	return &countedConn{Conn: conn, c: c}, nil
}

type countedConn struct {
	net.Conn
	c    *counting
	once sync.Once
}

func (cc *countedConn) Close() error {
	cc.once.Do(func() { cc.c.open.Add(-1) })
	return cc.Conn.Close()
}

// serve starts a server with lim on a loopback port; its handler echoes
// the body's length. It returns the address and the counter.
func serve(t *testing.T, lim httplimit.Limits) (string, *counting, *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	srv := lim.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		handled.Add(1)
		b, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "got %d bytes", len(b))
	}))
	c := &counting{Listener: ln}
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lim.Listener(srv, c)) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			srv.Close()
		}
		<-done
	})
	return ln.Addr().String(), c, &handled
}

func post(t *testing.T, client *http.Client, addr, body string) (int, string) {
	t.Helper()
	resp, err := client.Post("http://"+addr+"/", "text/plain", strings.NewReader(body))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestAttackSlowBody opens three times the connection cap, each sending a
// request's headers and the start of a body that never comes: the server
// never holds more connections than the cap, closes each stalled one when
// its body timeout passes (408), and serves a real request afterwards.
func TestAttackSlowBody(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const maxConns = 4
	lim := httplimit.Limits{MaxConns: maxConns, HeaderTimeout: 2 * time.Second, BodyTimeout: 300 * time.Millisecond}
	addr, c, handled := serve(t, lim)

	var wg sync.WaitGroup
	answers := make(chan string, 3*maxConns)
	for range 3 * maxConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				answers <- "dial: " + err.Error()
				return
			}
			defer conn.Close()
			fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\nthe start of a body", addr)
			// Wait, bounded, for the server to give up on us.
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil {
				answers <- "read: " + err.Error()
				return
			}
			answers <- strings.TrimSpace(line)
		}()
	}
	wg.Wait()
	close(answers)
	for a := range answers {
		if a != "HTTP/1.1 408 Request Timeout" {
			t.Errorf("a stalled request got %q, want 408", a)
		}
	}
	if p := c.peak.Load(); p > maxConns {
		t.Errorf("the server held %d connections at once, over its cap of %d", p, maxConns)
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("the handler ran %d times for bodies that never arrived", n)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	if code, body := post(t, client, addr, "hello"); code != http.StatusOK || body != "got 5 bytes" {
		t.Errorf("after the attack: %d %q, want 200 \"got 5 bytes\"", code, body)
	}
}

// TestAttackSlowHeaders sends the start of a request line and nothing
// more, on every connection the cap allows: each is closed when the header
// timeout passes, and the server serves again.
func TestAttackSlowHeaders(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const maxConns = 3
	lim := httplimit.Limits{MaxConns: maxConns, HeaderTimeout: 300 * time.Millisecond}
	addr, c, _ := serve(t, lim)
	var wg sync.WaitGroup
	for range 2 * maxConns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
			if err != nil {
				t.Errorf("dial: %v", err)
				return
			}
			defer conn.Close()
			fmt.Fprint(conn, "POST / HT")
			_ = conn.SetReadDeadline(time.Now().Add(30 * time.Second))
			_, err = io.ReadAll(conn)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Errorf("the server held a connection whose headers never came")
			}
		}()
	}
	wg.Wait()
	if p := c.peak.Load(); p > maxConns {
		t.Errorf("the server held %d connections at once, over its cap of %d", p, maxConns)
	}
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	if code, _ := post(t, client, addr, "hi"); code != http.StatusOK {
		t.Errorf("after the attack: %d, want 200", code)
	}
}

// TestAttackOversizedBody sends bodies over the limit, with and without a
// Content-Length: each is refused with 413 and the handler never runs.
func TestAttackOversizedBody(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	lim := httplimit.Limits{MaxBodyBytes: 1024}
	addr, _, handled := serve(t, lim)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	big := strings.Repeat("x", 4096)

	code, body := post(t, client, addr, big)
	if code != http.StatusRequestEntityTooLarge || !strings.Contains(body, "(4096 bytes) is larger than the limit of 1024 bytes") {
		t.Errorf("with a length: %d %q, want 413 naming both sizes", code, body)
	}
	// Chunked: the size is known only while reading.
	resp, err := client.Post("http://"+addr+"/", "text/plain", io.MultiReader(strings.NewReader(big)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "larger than the limit of 1024 bytes") {
		t.Errorf("chunked: %d %q, want 413", resp.StatusCode, b)
	}
	if n := handled.Load(); n != 0 {
		t.Errorf("the handler ran %d times for bodies over the limit", n)
	}
	if code, body := post(t, client, addr, "small"); code != http.StatusOK || body != "got 5 bytes" {
		t.Errorf("a body under the limit: %d %q", code, body)
	}
}

// TestStreamOutlivesBodyTimeout checks that the body deadline is lifted
// once the body is in: a handler may stream its answer for longer.
func TestStreamOutlivesBodyTimeout(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	lim := httplimit.Limits{BodyTimeout: 100 * time.Millisecond}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := lim.Server(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.ReadAll(r.Body)
		fmt.Fprintln(w, "first")
		w.(http.Flusher).Flush()
		select {
		case <-release:
			fmt.Fprintln(w, "second")
		case <-r.Context().Done():
			// A deadline left on the connection would end up here.
		}
	}))
	done := make(chan struct{})
	go func() { defer close(done); _ = srv.Serve(lim.Listener(srv, ln)) }()
	defer func() { srv.Close(); <-done }()

	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	resp, err := client.Post("http://"+ln.Addr().String()+"/", "text/plain", strings.NewReader("body"))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	rd := bufio.NewReader(resp.Body)
	if line, _ := rd.ReadString('\n'); line != "first\n" {
		t.Fatalf("first line %q", line)
	}
	// Several body timeouts pass while the handler streams.
	time.Sleep(5 * lim.BodyTimeout)
	close(release)
	if line, _ := rd.ReadString('\n'); line != "second\n" {
		t.Errorf("second line %q: the stream was cut once the body timeout passed", line)
	}
}

// TestIdleConnsMakeRoom fills the connection cap with clients that keep
// their connection open between requests: a new client is served at once,
// the connection idle longest being closed for it, rather than waiting for
// the idle timeout.
func TestIdleConnsMakeRoom(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const maxConns = 2
	lim := httplimit.Limits{MaxConns: maxConns, IdleTimeout: 5 * time.Minute}
	addr, c, _ := serve(t, lim)
	var clients []*http.Client
	for i := range maxConns + 3 {
		// Its own transport: its own kept-alive connection.
		client := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
		defer client.CloseIdleConnections()
		clients = append(clients, client)
		if code, body := post(t, client, addr, strings.Repeat("x", i)); code != http.StatusOK || body != fmt.Sprintf("got %d bytes", i) {
			t.Fatalf("client %d: %d %q", i, code, body)
		}
	}
	if p := c.peak.Load(); p > maxConns {
		t.Errorf("the server held %d connections at once, over its cap of %d", p, maxConns)
	}
	// The first clients' connections were closed for the later ones; they
	// connect again. The client may not have seen the close yet and send
	// on the dead connection: as with any server's idle timeout, a client
	// retries a request it may replay (Go's transport does for one with an
	// Idempotency-Key), which a plain POST is not.
	req, err := http.NewRequest(http.MethodPost, "http://"+addr+"/", strings.NewReader("again"))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Idempotency-Key", "again")
	resp, err := clients[0].Do(req)
	if err != nil {
		t.Fatalf("the first client again: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("the first client again: %d", resp.StatusCode)
	}
}

// TestLoopbackHost: only a Host header naming a loopback address passes.
func TestLoopbackHost(t *testing.T) {
	h := httplimit.LoopbackHost(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}))
	for host, want := range map[string]int{
		"127.0.0.1:9464": 200, "localhost:9464": 200, "[::1]:9464": 200, "localhost": 200,
		"evil.example:9464": 403, "10.0.0.1:9464": 403, "": 403,
	} {
		r := httptest.NewRequest("GET", "/metrics", nil)
		r.Host = host
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != want {
			t.Errorf("Host %q: %d, want %d", host, w.Code, want)
		}
	}
}

// TestBodyLimit: a request's own bound, below MaxBodyBytes, refuses a
// larger body before the handler runs; other requests keep MaxBodyBytes.
func TestBodyLimit(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	lim := httplimit.Limits{MaxBodyBytes: 4096, BodyLimit: func(r *http.Request) int64 {
		if r.URL.Path == "/small" {
			return 100
		}
		return 0
	}}
	addr, _, handled := serve(t, lim)
	client := &http.Client{Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	body := strings.Repeat("x", 1000)
	for _, tc := range []struct {
		path string
		code int
	}{{"/small", http.StatusRequestEntityTooLarge}, {"/", http.StatusOK}} {
		resp, err := client.Post("http://"+addr+tc.path, "text/plain", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.code {
			t.Errorf("%s with 1000 bytes: %d %q, want %d", tc.path, resp.StatusCode, b, tc.code)
		}
		if tc.code != http.StatusOK && !strings.Contains(string(b), "larger than the limit of 100 bytes") {
			t.Errorf("%s: %q does not name the request's own limit", tc.path, b)
		}
	}
	if n := handled.Load(); n != 1 {
		t.Errorf("the handler ran %d times, want once (for the body under its limit)", n)
	}
}
