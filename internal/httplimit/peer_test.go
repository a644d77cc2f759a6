package httplimit_test

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/httplimit"
)

// byAddress keys a peer by its address alone: the test's two peers are
// 127.0.0.2 and 127.0.0.1, which peeruid would both name by this process's
// user.
func byAddress(c net.Conn) string { return c.RemoteAddr().(*net.TCPAddr).IP.String() }

// dialFrom connects to addr from the loopback address src.
func dialFrom(t *testing.T, src, addr string) net.Conn {
	t.Helper()
	d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("dial from %s: %v", src, err)
	}
	return c
}

// TestAttackSlowLorisFromOnePeer: one peer opens the whole connection cap
// of requests whose body never comes. Only MaxConnsPerPeer of them are
// held; the others are answered 429 at once, and another peer's request
// is served while the stalled ones wait for their timeout. Without the
// bound per peer, the other peer waits behind them.
func TestAttackSlowLorisFromOnePeer(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	const maxConns, perPeer = 8, 2
	var mu sync.Mutex
	var refused []string
	lim := httplimit.Limits{MaxConns: maxConns, MaxConnsPerPeer: perPeer, PeerKey: byAddress,
		HeaderTimeout: 20 * time.Second, BodyTimeout: 20 * time.Second,
		OnPeerRefused: func(peer string) { mu.Lock(); refused = append(refused, peer); mu.Unlock() }}
	addr, c, _ := serve(t, lim)

	var wg sync.WaitGroup
	answers := make(chan string, maxConns)
	var conns []net.Conn
	for range maxConns {
		conn := dialFrom(t, "127.0.0.2", addr)
		conns = append(conns, conn)
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 1000\r\n\r\nthe start of a body", addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = conn.SetReadDeadline(time.Now().Add(3 * time.Second))
			line, err := bufio.NewReader(conn).ReadString('\n')
			if err != nil {
				answers <- "read: " + err.Error()
				return
			}
			answers <- strings.TrimSpace(line)
		}()
	}
	defer func() {
		for _, conn := range conns {
			conn.Close()
		}
	}()

	// The other peer is served while the stalled requests are held.
	served := make(chan string, 1)
	go func() {
		conn := dialFrom(t, "127.0.0.1", addr)
		defer conn.Close()
		_ = conn.SetDeadline(time.Now().Add(3 * time.Second))
		fmt.Fprintf(conn, "POST / HTTP/1.1\r\nHost: %s\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello", addr)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			served <- "error: " + err.Error()
			return
		}
		resp.Body.Close()
		served <- resp.Status
	}()
	if got := <-served; got != "200 OK" {
		t.Errorf("the other peer got %q while one peer stalled its requests, want 200 OK", got)
	}

	wg.Wait()
	close(answers)
	var tooMany, held int
	for a := range answers {
		switch {
		case a == "HTTP/1.1 429 Too Many Requests":
			tooMany++
		case strings.HasPrefix(a, "read: ") && strings.Contains(a, "timeout"):
			held++ // still waiting for its body
		default:
			t.Errorf("a stalled request got %q", a)
		}
	}
	if tooMany != maxConns-perPeer || held != perPeer {
		t.Errorf("%d stalled requests held and %d refused with 429, want %d and %d", held, tooMany, perPeer, maxConns-perPeer)
	}
	mu.Lock()
	if len(refused) != maxConns-perPeer || refused[0] != "127.0.0.2" {
		t.Errorf("refusals told: %v", refused)
	}
	mu.Unlock()
	if p := c.peak.Load(); p > maxConns {
		t.Errorf("the server held %d connections at once, over its cap of %d", p, maxConns)
	}
}

// TestPeerIdleMakesRoom: a peer at its bound whose connections are idle
// keep-alives gets its idle-longest closed for a new one, not a 429.
func TestPeerIdleMakesRoom(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	lim := httplimit.Limits{MaxConns: 8, MaxConnsPerPeer: 1, PeerKey: byAddress}
	addr, _, _ := serve(t, lim)
	for i := range 3 {
		// A new transport each time: a new connection, the last left idle.
		tr := &http.Transport{}
		defer tr.CloseIdleConnections()
		if code, body := post(t, &http.Client{Transport: tr}, addr, "hello"); code != http.StatusOK {
			t.Fatalf("request %d: %d %s", i, code, body)
		}
	}
}

// TestPeerOf: a loopback peer is named by its user, so that local users
// sharing 127.0.0.1 are told apart; a Unix socket's peer has no key.
func TestPeerOf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("a loopback peer's user is told on Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	server, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer server.Close()
	if got, want := httplimit.PeerOf(server), fmt.Sprintf("uid %d", os.Getuid()); got != want {
		t.Errorf("PeerOf = %q, want %q", got, want)
	}
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	if got := httplimit.PeerOf(a); got != "" {
		t.Errorf("PeerOf(pipe) = %q, want none", got)
	}
}
