// Package testhaproxy runs a real HAProxy (Debian's haproxy) for a test, on
// a loopback port of its own, in front of the servers the test names, routing
// on the Mcp-Session-Id header with a stick table; it is stopped when the test
// ends.
package testhaproxy

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// Proxy is a running haproxy.
type Proxy struct {
	Addr   string // 127.0.0.1:port, where clients connect
	Config string // the configuration it runs, for a failing test to print
	cmd    *exec.Cmd
	out    *strings.Builder
	done   chan struct{}
}

// Config is the configuration Start writes for backends (name → host:port):
// round robin for a request without a session, then the stick table keeps
// every request carrying a session's Mcp-Session-Id on the server that
// answered with it. A server that stops answering its health check is taken
// out, and a request stuck to it goes to another (option redispatch), which
// answers 404 for a session it does not know.
func Config(listen string, backends map[string]string, names []string) string {
	var b strings.Builder
	fmt.Fprintf(&b, `global
  maxconn 256

defaults
  mode http
  timeout connect 2s
  timeout client 2m
  timeout server 2m
  timeout http-request 10s
  retries 2
  option redispatch

frontend mcp
  bind %s
  default_backend replicas

backend replicas
  balance roundrobin
  stick-table type string len 128 size 10k expire 30m
  stick on req.hdr(Mcp-Session-Id)
  stick store-response res.hdr(Mcp-Session-Id)
`, listen)
	for _, n := range names {
		fmt.Fprintf(&b, "  server %s %s check inter 100ms fall 1 rise 1\n", n, backends[n])
	}
	return b.String()
}

// Start starts haproxy in front of backends, listed in the order of names;
// without haproxy the test ends through testenv.Missing (a failure in CI).
func Start(t testing.TB, backends map[string]string, names []string) *Proxy {
	t.Helper()
	bin := lookHAProxy(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &Proxy{Addr: addr, Config: Config(addr, backends, names), out: &strings.Builder{}, done: make(chan struct{})}
	cfg := filepath.Join(t.TempDir(), "haproxy.cfg")
	if err := os.WriteFile(cfg, []byte(p.Config), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "-c", "-f", cfg).CombinedOutput(); err != nil {
		t.Fatalf("haproxy -c refuses the configuration: %v\n%s\n%s", err, out, p.Config)
	}
	// -db: in the foreground, not a daemon, so that the test owns it.
	p.cmd = exec.Command(bin, "-db", "-f", cfg)
	p.cmd.Stdout = &syncWriter{b: p.out}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("haproxy: %v", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			c.Close()
			return p
		}
		select {
		case <-p.done:
			t.Fatalf("haproxy exited at start:\n%s", p.Output())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("haproxy did not listen on %s:\n%s", addr, p.Output())
	return nil
}

// lookHAProxy finds haproxy on PATH or where Debian puts it (/usr/sbin is
// not on every user's PATH).
func lookHAProxy(t testing.TB) string {
	t.Helper()
	if p, err := exec.LookPath("haproxy"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/haproxy"); err == nil {
		return "/usr/sbin/haproxy"
	}
	testenv.Missing(t, "haproxy (Debian: haproxy), neither on PATH nor in /usr/sbin")
	return ""
}

// Output is what haproxy has logged so far.
func (p *Proxy) Output() string {
	w := p.cmd.Stdout.(*syncWriter)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// Stop ends haproxy; it may be called more than once.
func (p *Proxy) Stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = p.cmd.Process.Kill()
	<-p.done
}
