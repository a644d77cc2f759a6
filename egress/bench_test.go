package egress

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"sync"
	"testing"
)

// echoServer writes back what it reads, on loopback, until the benchmark
// ends.
func echoServer(b *testing.B) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	// As echo: the accept loop counts itself.
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				_, _ = io.Copy(c, c)
			}()
		}
	}()
	b.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

// staticResolver answers every name with addr.
type staticResolver netip.Addr

func (r staticResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{netip.Addr(r)}, nil
}

// roundTrip opens a connection (a tunnel when proxy is set), sends a line,
// reads it back and closes: what one short outbound request costs.
func roundTrip(b *testing.B, proxy, target string) {
	dial := target
	if proxy != "" {
		dial = proxy
	}
	c, err := net.Dial("tcp", dial)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	br := bufio.NewReader(c)
	if proxy != "" {
		fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("CONNECT %s: %v %v", target, resp, err)
		}
	}
	if _, err := io.WriteString(c, "ping\n"); err != nil {
		b.Fatal(err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "ping\n" {
		b.Fatalf("echo: %q %v", line, err)
	}
}

// BenchmarkConnection compares a connection through the proxy (a name
// resolved, checked and dialled, a CONNECT, one line each way) with a
// direct one to the same loopback server; the ratio of the two is the
// proxy's cost per connection.
func BenchmarkConnection(b *testing.B) {
	backend := echoServer(b)
	_, port, _ := net.SplitHostPort(backend)
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			roundTrip(b, "", backend)
		}
	})
	b.Run("proxy", func(b *testing.B) {
		rules, err := ParseList([]string{"api.example.com:" + port, "127.0.0.1/32:" + port})
		if err != nil {
			b.Fatal(err)
		}
		p := New(Config{Plugin: "bench", Rules: rules, Resolver: staticResolver(netip.MustParseAddr("127.0.0.1"))})
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() { defer close(done); _ = p.Serve(ln) }()
		defer func() { p.Close(); <-done }()
		for b.Loop() {
			roundTrip(b, ln.Addr().String(), "api.example.com:"+port)
		}
	})
}

// BenchmarkIdleProxyMemory reports the heap an idle proxy takes (its
// state, its listener, its accepting goroutine): what each plugin with an
// egress list costs the host while it makes no connection.
func BenchmarkIdleProxyMemory(b *testing.B) {
	const n = 200
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		proxies := make([]*Proxy, n)
		var wg sync.WaitGroup
		for i := range proxies {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			proxies[i] = New(Config{Plugin: "bench"})
			wg.Add(1)
			go func() { defer wg.Done(); _ = proxies[i].Serve(ln) }()
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapInuse+after.StackInuse-before.HeapInuse-before.StackInuse)/n, "bytes/proxy")
		for _, p := range proxies {
			p.Close()
		}
		wg.Wait()
	}
}
