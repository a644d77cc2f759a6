package egress

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"time"
)

// Resolver looks names up for the proxy; *net.Resolver is one. Tests give
// one that asks a DNS server of their own.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Dialer opens a TCP connection to an address the proxy has checked.
type Dialer func(ctx context.Context, network, address string) (net.Conn, error)

// Event is one outbound connection a plugin asked for, allowed or not.
type Event struct {
	Plugin string
	// Call is the tool call in flight in the plugin when the connection
	// was asked for, where the host knows it ("" otherwise).
	Call string
	// Method is CONNECT for a tunnel, else the plain HTTP request's.
	Method string
	Host   string
	Port   uint16
	// Addr is the address dialled; for a refusal, those the name
	// resolved to (comma-separated), if it came to a lookup.
	Addr    string
	Allowed bool
	// Reason says why a connection was refused or ended in error.
	Reason string
	// BytesOut went to the destination, BytesIn came from it.
	BytesOut, BytesIn int64
	Start             time.Time
	Duration          time.Duration
}

// Config is one plugin's proxy.
type Config struct {
	Plugin string
	Rules  List
	// Resolver defaults to net.DefaultResolver.
	Resolver Resolver
	// Dial defaults to a net.Dialer with DialTimeout.
	Dial Dialer
	// Record is told every connection once it has ended (or was refused).
	Record func(Event)
	// Call, when set, names the tool call in flight in the plugin.
	Call func() string
	// MaxConns bounds the connections open at once (DefaultMaxConns).
	MaxConns int
}

const (
	// DefaultMaxConns is how many connections a plugin may hold open
	// through its proxy at once; past it a new one waits.
	DefaultMaxConns = 64
	// DialTimeout bounds a dial to an allowed address.
	DialTimeout = 10 * time.Second
	// requestTimeout bounds reading a request's head from the plugin.
	requestTimeout = 30 * time.Second
	// maxHead bounds a request's head.
	maxHead = 64 << 10
)

// Proxy is the forward proxy of one plugin: HTTP CONNECT tunnels and plain
// HTTP requests with absolute URLs, each to a destination its allow-list
// covers, dialled at an address the proxy resolved and checked itself.
type Proxy struct {
	cfg   Config
	slots chan struct{}

	mu     sync.Mutex
	closed bool
	lns    map[net.Listener]struct{}
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	ctx    context.Context
	cancel context.CancelFunc
}

// New returns a proxy for cfg; Serve runs it on a listener.
func New(cfg Config) *Proxy {
	if cfg.Resolver == nil {
		cfg.Resolver = net.DefaultResolver
	}
	if cfg.Dial == nil {
		d := &net.Dialer{Timeout: DialTimeout}
		cfg.Dial = d.DialContext
	}
	if cfg.MaxConns <= 0 {
		cfg.MaxConns = DefaultMaxConns
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Proxy{cfg: cfg, slots: make(chan struct{}, cfg.MaxConns), lns: map[net.Listener]struct{}{}, conns: map[net.Conn]struct{}{}, ctx: ctx, cancel: cancel}
}

// Serve accepts connections on l until it fails or the proxy is closed
// (then it returns nil). The proxy closes l.
func (p *Proxy) Serve(l net.Listener) error {
	if !p.track(l) {
		_ = l.Close()
		return nil
	}
	for {
		select {
		case p.slots <- struct{}{}:
		case <-p.ctx.Done():
			return nil
		}
		c, err := l.Accept()
		if err != nil {
			<-p.slots
			if p.ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("egress proxy of %s: accept: %w", p.cfg.Plugin, err)
		}
		if !p.trackConn(c) {
			<-p.slots
			_ = c.Close()
			return nil
		}
		go func() {
			defer p.wg.Done()
			defer func() { <-p.slots }()
			defer p.untrack(c)
			p.handle(c)
		}()
	}
}

func (p *Proxy) track(l net.Listener) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.lns[l] = struct{}{}
	return true
}

func (p *Proxy) trackConn(c net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return false
	}
	p.conns[c] = struct{}{}
	p.wg.Add(1)
	return true
}

func (p *Proxy) untrack(c net.Conn) {
	p.mu.Lock()
	delete(p.conns, c)
	p.mu.Unlock()
	_ = c.Close()
}

// Close stops the proxy: its listeners and every connection through it
// are closed, and it returns once their handlers have.
func (p *Proxy) Close() error {
	p.mu.Lock()
	p.closed = true
	p.cancel()
	for l := range p.lns {
		_ = l.Close()
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
	return nil
}

// handle serves one connection from the plugin: one request.
func (p *Proxy) handle(c net.Conn) {
	ev := Event{Plugin: p.cfg.Plugin, Start: time.Now()}
	if p.cfg.Call != nil {
		ev.Call = p.cfg.Call()
	}
	limit := &io.LimitedReader{R: c, N: maxHead}
	br := bufio.NewReader(limit)
	_ = c.SetReadDeadline(time.Now().Add(requestTimeout))
	req, err := http.ReadRequest(br)
	if err != nil {
		// Not a proxy request (a plugin talking something else to the
		// proxy's port): nothing to dial, still recorded.
		ev.Reason = "not an HTTP proxy request: " + err.Error()
		p.record(ev)
		_, _ = io.WriteString(c, response(http.StatusBadRequest, ev.Reason))
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	limit.N = 1<<63 - 1
	ev.Method = req.Method
	var reply string
	if req.Method == http.MethodConnect {
		reply = p.tunnel(c, br, req, &ev)
	} else {
		reply = p.forward(c, br, req, &ev)
	}
	// A refusal is recorded before the plugin learns of it.
	p.record(ev)
	if reply != "" {
		_, _ = io.WriteString(c, reply)
	}
}

func (p *Proxy) record(ev Event) {
	ev.Duration = time.Since(ev.Start)
	if p.cfg.Record != nil {
		p.cfg.Record(ev)
	}
}

// target splits a request's authority, with def as the port when it has
// none; the host is lower case with no trailing dot or brackets.
func target(authority string, def uint16) (string, uint16, error) {
	host, port := authority, def
	if h, ps, err := net.SplitHostPort(authority); err == nil {
		n, err := parsePort(ps)
		if err != nil {
			return "", 0, err
		}
		host, port = h, n
	} else if def == 0 {
		return "", 0, fmt.Errorf("%q has no port", authority)
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" {
		return "", 0, errors.New("an empty host")
	}
	return host, port, nil
}

// dial connects to host:port if the allow-list covers it: an address only
// where a range entry covers it; a name only where a name entry covers it,
// at one of the addresses the proxy resolved for it that is not special
// (or that a range entry covers). The address checked is the one dialled.
func (p *Proxy) dial(ctx context.Context, host string, port uint16, ev *Event) (net.Conn, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return nil, errors.New("an address with a zone")
		}
		a = a.Unmap()
		ev.Addr = netip.AddrPortFrom(a, port).String()
		if !p.cfg.Rules.allowsRange(a, port) {
			return nil, fmt.Errorf("%s is an address no range entry covers", ev.Addr)
		}
		return p.cfg.Dial(ctx, "tcp", ev.Addr)
	}
	if err := checkName(host); err != nil {
		return nil, err
	}
	if !p.cfg.Rules.allowsName(host, port) {
		// Not looked up either: a name outside the list leaks nothing
		// through DNS.
		return nil, fmt.Errorf("%s:%d is not in the allow-list", host, port)
	}
	addrs, err := p.cfg.Resolver.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return nil, fmt.Errorf("resolve %s: %w", host, err)
	}
	var ok, refused []string
	var errs []error
	for _, a := range addrs {
		a = a.Unmap()
		if a.Zone() != "" || Special(a) && !p.cfg.Rules.allowsRange(a, port) {
			refused = append(refused, a.String())
			continue
		}
		ap := netip.AddrPortFrom(a, port).String()
		ok = append(ok, ap)
		c, err := p.cfg.Dial(ctx, "tcp", ap)
		if err == nil {
			ev.Addr = ap
			return c, nil
		}
		errs = append(errs, err)
	}
	if len(ok) == 0 {
		ev.Addr = strings.Join(refused, ",")
		return nil, fmt.Errorf("%s resolves only to private, loopback, link-local or reserved addresses (%s) no range entry covers", host, ev.Addr)
	}
	ev.Addr = strings.Join(ok, ",")
	return nil, &dialError{errors.Join(errs...)}
}

// dialError is a failed dial to an allowed address, as opposed to a
// refusal.
type dialError struct{ err error }

func (e *dialError) Error() string { return "dial: " + e.err.Error() }
func (e *dialError) Unwrap() error { return e.err }

func refusal(err error) int {
	var de *dialError
	if errors.As(err, &de) {
		return http.StatusBadGateway
	}
	return http.StatusForbidden
}

func response(code int, msg string) string {
	body := "egress: " + msg + "\n"
	return fmt.Sprintf("HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		code, http.StatusText(code), len(body), body)
}

// open checks and dials the destination authority names (def is the port
// when it names none) and tracks the connection; when up is nil, reply is
// what to answer (empty when nothing is). The caller ends the tracking
// (wg.Done, untrack).
func (p *Proxy) open(authority string, def uint16, bad string, ev *Event) (up net.Conn, reply string) {
	host, port, err := target(authority, def)
	if err != nil {
		ev.Reason = bad + ": " + err.Error()
		return nil, response(http.StatusBadRequest, ev.Reason)
	}
	ev.Host, ev.Port = host, port
	up, err = p.dial(p.ctx, host, port, ev)
	if err != nil {
		ev.Reason = err.Error()
		return nil, response(refusal(err), ev.Reason)
	}
	if !p.trackConn(up) {
		_ = up.Close()
		ev.Reason = "proxy closed"
		return nil, ""
	}
	return up, ""
}

// tunnel serves CONNECT: once the destination is dialled, bytes flow both
// ways; a TLS ClientHello's server name, when one is sent, must be the
// CONNECT host.
func (p *Proxy) tunnel(c net.Conn, br *bufio.Reader, req *http.Request, ev *Event) (reply string) {
	up, reply := p.open(req.Host, 0, "bad CONNECT target", ev)
	if up == nil {
		return reply
	}
	defer p.wg.Done()
	defer p.untrack(up)
	host := ev.Host
	if _, err := io.WriteString(c, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
		ev.Allowed, ev.Reason = true, err.Error()
		return ""
	}
	cu := &counted{Conn: up}
	// The server's bytes flow at once (a protocol where it speaks first
	// works); the plugin's only once its first bytes are checked.
	down := make(chan struct{})
	go func() {
		defer close(down)
		ev.BytesIn = copyHalf(c, cu)
	}()
	first, sni, isTLS, err := peekServerName(br)
	mismatch := isTLS && sni != "" && !strings.EqualFold(strings.TrimSuffix(sni, "."), host)
	switch {
	case errors.Is(err, errBadHello) || mismatch:
		ev.Reason = fmt.Sprintf("TLS server name %q is not the CONNECT host %q", sni, host)
		if !mismatch {
			ev.Reason = err.Error()
		}
		_ = up.Close()
		_ = c.Close()
		<-down
		ev.BytesIn = cu.in.Load()
		return ""
	case err != nil && len(first) == 0:
		// The plugin sent nothing and closed its side.
	default:
		if _, err := cu.Write(first); err == nil {
			copyHalf(cu, readerConn{br, c})
		}
	}
	<-down
	ev.Allowed = true
	ev.BytesOut = cu.out.Load()
	return ""
}

// forward serves one plain HTTP request with an absolute URL, asking the
// destination to close the connection after its response, which is
// copied back as it comes.
func (p *Proxy) forward(c net.Conn, br *bufio.Reader, req *http.Request, ev *Event) (reply string) {
	if !req.URL.IsAbs() || req.URL.Scheme != "http" {
		ev.Reason = fmt.Sprintf("%s %s: only CONNECT or an absolute http:// URL may be proxied", req.Method, req.RequestURI)
		return response(http.StatusBadRequest, ev.Reason)
	}
	up, reply := p.open(req.URL.Host, 80, "bad URL host", ev)
	if up == nil {
		return reply
	}
	defer p.wg.Done()
	defer p.untrack(up)
	ev.Allowed = true
	for _, h := range []string{"Proxy-Connection", "Proxy-Authorization", "Proxy-Authenticate"} {
		req.Header.Del(h)
	}
	req.Close = true
	req.RequestURI = ""
	cu := &counted{Conn: up}
	if err := req.Write(cu); err != nil {
		ev.Reason = "write request: " + err.Error()
		ev.BytesOut = cu.out.Load()
		return ""
	}
	ev.BytesIn = copyHalf(c, cu)
	ev.BytesOut = cu.out.Load()
	return ""
}

// copyHalf copies src to dst until src ends, then ends dst's writing
// half; it returns the bytes copied.
func copyHalf(dst io.Writer, src io.Reader) int64 {
	n, _ := io.Copy(dst, src)
	if cw, ok := dst.(interface{ CloseWrite() error }); ok {
		_ = cw.CloseWrite()
	}
	return n
}

// readerConn reads what the request's reader has buffered, then the
// connection.
type readerConn struct {
	r io.Reader
	net.Conn
}

func (r readerConn) Read(b []byte) (int, error) { return r.r.Read(b) }
