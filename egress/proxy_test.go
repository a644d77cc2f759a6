package egress

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testcert"
	"github.com/plugkit-go/plugkit/internal/testkit/testdns"
)

// rig is a proxy whose dials all go to one local backend, whatever the
// address checked: the addresses the names resolve to stand for the
// outside and no packet is sent to them.
type rig struct {
	addr    string // the proxy's
	dns     *testdns.Server
	mu      sync.Mutex
	dialled []string
	events  chan Event
}

func (r *rig) dials() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.dialled...)
}

// next is the event of the next connection to end: each has one.
func (r *rig) next(t *testing.T) Event {
	t.Helper()
	return <-r.events
}

func newRig(t *testing.T, backend string, rules []string, answer testdns.Answer) *rig {
	t.Helper()
	list, err := ParseList(rules)
	if err != nil {
		t.Fatal(err)
	}
	r := &rig{dns: testdns.Start(t, answer), events: make(chan Event, 100)}
	p := New(Config{
		Plugin:   "hostile",
		Rules:    list,
		Resolver: testdns.Resolver(r.dns.Addr),
		Dial: func(ctx context.Context, network, address string) (net.Conn, error) {
			r.mu.Lock()
			r.dialled = append(r.dialled, address)
			r.mu.Unlock()
			var d net.Dialer
			return d.DialContext(ctx, network, backend)
		},
		Record: func(e Event) { r.events <- e },
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r.addr = ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- p.Serve(ln) }()
	t.Cleanup(func() {
		p.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return r
}

// echo runs a TCP server that writes back what it reads.
func echo(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	// The accept loop counts itself, so that each connection's Add happens
	// while the count is above zero: an Add from zero racing the cleanup's
	// Wait is a misuse the race detector reports.
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
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func public(name string, n int) []netip.Addr {
	switch name {
	case "allowed.test", "other.test":
		return []netip.Addr{netip.MustParseAddr("93.184.215.14")}
	case "private.test":
		return []netip.Addr{netip.MustParseAddr("10.1.2.3")}
	case "v6.test":
		return []netip.Addr{netip.MustParseAddr("fd00::1"), netip.MustParseAddr("::1")}
	case "metadata.test":
		return []netip.Addr{netip.MustParseAddr("169.254.169.254")}
	case "rebind.test":
		if n == 1 {
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}
		}
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	}
	return nil
}

// connect asks the proxy for a tunnel and returns the response's status
// and the connection, open when the status is 200.
func connect(t *testing.T, proxy, target string) (int, net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", proxy)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(c, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target)
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodConnect})
	if err != nil {
		c.Close()
		t.Fatalf("CONNECT %s: %v", target, err)
	}
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		c.Close()
		t.Logf("CONNECT %s: %d %s", target, resp.StatusCode, strings.TrimSpace(string(body)))
		return resp.StatusCode, nil, nil
	}
	t.Cleanup(func() { c.Close() })
	return resp.StatusCode, c, br
}

func TestTunnelToAllowedName(t *testing.T) {
	r := newRig(t, echo(t), []string{"allowed.test"}, public)
	code, c, br := connect(t, r.addr, "allowed.test:443")
	if code != http.StatusOK {
		t.Fatalf("CONNECT allowed.test:443 = %d, want 200", code)
	}
	fmt.Fprint(c, "ping\n")
	line, err := br.ReadString('\n')
	if err != nil || line != "ping\n" {
		t.Fatalf("through the tunnel: %q, %v", line, err)
	}
	c.Close()
	if d := r.dials(); len(d) != 1 || d[0] != "93.184.215.14:443" {
		t.Fatalf("dialled %v, want the address resolved: [93.184.215.14:443]", d)
	}
}

func TestRefusedBeforeAnyDial(t *testing.T) {
	r := newRig(t, echo(t), []string{"allowed.test", "private.test", "metadata.test", "v6.test", "allowed.test:8443"}, public)
	for _, target := range []string{
		"other.test:443",         // a name not listed
		"allowed.test:22",        // a listed name on another port
		"93.184.215.14:443",      // the allowed name's address, raw
		"93.184.215.14:8443",     // and on another port
		"169.254.169.254:80",     // metadata, raw
		"metadata.test:443",      // metadata, by a listed name
		"private.test:443",       // a private range, by a listed name
		"10.1.2.3:443",           // a private range, raw
		"[::1]:443",              // IPv6 loopback, raw
		"[fd00::1]:443",          // IPv6 unique local, raw
		"v6.test:443",            // IPv6 special ranges, by a listed name
		"[::ffff:127.0.0.1]:443", // IPv4-mapped loopback
		"[fe80::1%25lo]:443",     // link-local with a zone
		"localhost:443",          // not listed
		"ALLOWED.test.:22",       // case and a trailing dot change nothing
	} {
		code, _, _ := connect(t, r.addr, target)
		if code != http.StatusForbidden && code != http.StatusBadRequest {
			t.Errorf("CONNECT %s = %d, want 403", target, code)
		}
		if ev := r.next(t); ev.Allowed || ev.Reason == "" {
			t.Errorf("CONNECT %s: event %+v, want a refusal with its reason", target, ev)
		}
	}
	if d := r.dials(); len(d) != 0 {
		t.Fatalf("dialled %v, want nothing", d)
	}
	if n := r.dns.Queries("other.test"); n != 0 {
		t.Errorf("a name not listed was looked up %d times", n)
	}
}

func TestRangeEntryAllowsPrivate(t *testing.T) {
	r := newRig(t, echo(t), []string{"private.test", "10.0.0.0/8:443"}, public)
	for _, target := range []string{"private.test:443", "10.1.2.3:443"} {
		if code, _, _ := connect(t, r.addr, target); code != http.StatusOK {
			t.Errorf("CONNECT %s = %d, want 200 (a range entry names it)", target, code)
		}
	}
	if code, _, _ := connect(t, r.addr, "10.1.2.3:5432"); code != http.StatusForbidden {
		t.Errorf("CONNECT 10.1.2.3:5432 = %d, want 403 (another port)", code)
	}
}

func TestRebindingDialsTheAddressChecked(t *testing.T) {
	r := newRig(t, echo(t), []string{"rebind.test"}, public)
	if code, _, _ := connect(t, r.addr, "rebind.test:443"); code != http.StatusOK {
		t.Fatalf("first CONNECT = %d, want 200", code)
	}
	// The second answer is loopback: refused, whatever the first was.
	if code, _, _ := connect(t, r.addr, "rebind.test:443"); code != http.StatusForbidden {
		t.Fatalf("second CONNECT = %d, want 403", code)
	}
	if d := r.dials(); len(d) != 1 || d[0] != "93.184.215.14:443" {
		t.Fatalf("dialled %v, want only [93.184.215.14:443]", d)
	}
	if n := r.dns.Queries("rebind.test"); n != 2 {
		t.Fatalf("rebind.test asked %d times, want once per connection (2)", n)
	}
}

// tlsBackend is a TLS server answering "hello" to each connection.
func tlsBackend(t *testing.T) string {
	t.Helper()
	certFile, keyFile, _ := testcert.Write(t, t.TempDir())
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}})
	if err != nil {
		t.Fatal(err)
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
				_, _ = io.WriteString(c, "hello\n")
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().String()
}

func TestServerNameMustBeTheConnectHost(t *testing.T) {
	r := newRig(t, tlsBackend(t), []string{"allowed.test"}, public)
	hello := func(sni string) (string, error) {
		_, c, br := connect(t, r.addr, "allowed.test:443")
		if c == nil {
			t.Fatal("CONNECT refused")
		}
		// The test certificate is not for allowed.test: what is checked
		// here is the proxy, not the certificate.
		tc := tls.Client(readerConn{br, c}, &tls.Config{ServerName: sni, InsecureSkipVerify: true})
		defer tc.Close()
		line, err := bufio.NewReader(tc).ReadString('\n')
		return line, err
	}
	if line, err := hello("allowed.test"); err != nil || line != "hello\n" {
		t.Fatalf("TLS to allowed.test: %q, %v", line, err)
	}
	if ev := r.next(t); !ev.Allowed || ev.BytesIn == 0 || ev.BytesOut == 0 {
		t.Fatalf("event %+v, want allowed with bytes both ways", ev)
	}
	if line, err := hello("evil.test"); err == nil {
		t.Fatalf("TLS naming evil.test through a tunnel to allowed.test: got %q", line)
	}
	ev := r.next(t)
	if ev.Allowed || !strings.Contains(ev.Reason, "evil.test") {
		t.Fatalf("event %+v, want a refusal naming the server name", ev)
	}
}

func TestPlainHTTP(t *testing.T) {
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		fmt.Fprintf(w, "host=%s path=%s proxyhdr=%q", req.Host, req.URL.Path, req.Header.Get("Proxy-Authorization"))
	})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	r := newRig(t, ln.Addr().String(), []string{"allowed.test:80"}, public)
	get := func(u string) (int, string) {
		tr := &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: r.addr})}
		defer tr.CloseIdleConnections()
		req, _ := http.NewRequest(http.MethodGet, u, nil)
		req.Header.Set("Proxy-Authorization", "secret")
		resp, err := (&http.Client{Transport: tr}).Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", u, err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := get("http://allowed.test/x")
	if code != http.StatusOK || body != `host=allowed.test path=/x proxyhdr=""` {
		t.Fatalf("GET http://allowed.test/x = %d %q", code, body)
	}
	if ev := r.next(t); !ev.Allowed || ev.Method != http.MethodGet || ev.Addr != "93.184.215.14:80" || ev.BytesIn == 0 {
		t.Fatalf("event %+v", ev)
	}
	if code, _ := get("http://169.254.169.254/latest/meta-data/"); code != http.StatusForbidden {
		t.Fatalf("GET metadata = %d, want 403", code)
	}
	if code, _ := get("http://other.test/"); code != http.StatusForbidden {
		t.Fatalf("GET other.test = %d, want 403", code)
	}
	if d := r.dials(); len(d) != 1 {
		t.Fatalf("dialled %v, want one dial", d)
	}
}

func TestNotAProxyRequest(t *testing.T) {
	r := newRig(t, echo(t), nil, public)
	c, err := net.Dial("tcp", r.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	fmt.Fprint(c, "\x16\x03\x01garbage\r\n\r\n")
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("garbage: %v %v, want 400", resp, err)
	}
	resp.Body.Close()
}
