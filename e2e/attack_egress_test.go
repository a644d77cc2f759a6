package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testdns"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
	"github.com/plugkit-go/plugkit/sandbox"
)

// lineServer answers each line a client sends with reply, on loopback,
// counting its connections; it stops with the test.
func lineServer(t *testing.T, reply string) (port int, conns *atomic.Int64) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	conns = new(atomic.Int64)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns.Add(1)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer c.Close()
				br := bufio.NewReader(c)
				for {
					if _, err := br.ReadString('\n'); err != nil {
						return
					}
					if _, err := fmt.Fprintln(c, reply); err != nil {
						return
					}
				}
			}()
		}
	}()
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	return ln.Addr().(*net.TCPAddr).Port, conns
}

// TestAttackEgress: a sandboxed plugin whose egress list names a few
// hosts tries every way out. The test's own DNS server and loopback
// servers stand in for the outside (a range entry for 127.0.0.1 on the
// allowed port lets the proxy dial loopback there, as it would a public
// address). Only the allowed name, through the proxy, gets through; the
// proxy refuses the rest before any dial and the audit has a line for
// each; the direct TCP connect and the UDP question fail in the plugin's
// network namespace. An unsandboxed twin makes the same direct attempts
// and succeeds, so the attempts themselves work.
func TestAttackEgress(t *testing.T) {
	needShippedDeployment(t)
	if s := sandbox.Detect(bins.Path("host")); !s.NetNS || s.LandlockABI < 4 {
		t.Skipf("egress needs a network namespace and Landlock ABI 4 for sandboxed plugins: %s", s)
	}
	port, backend := lineServer(t, "pong")
	otherPort, other := lineServer(t, "other")
	loop := netip.MustParseAddr("127.0.0.1")
	dns := testdns.Start(t, func(name string, n int) []netip.Addr {
		switch name {
		case "allowed.test", "other.test":
			return []netip.Addr{loop}
		case "rebind.test":
			// Allowed at the first query, the metadata address after.
			if n == 1 {
				return []netip.Addr{loop}
			}
			return []netip.Addr{netip.MustParseAddr("169.254.169.254")}
		case "private.test":
			return []netip.Addr{netip.MustParseAddr("10.1.2.3")}
		case "v6.test":
			return []netip.Addr{netip.MustParseAddr("::1"), netip.MustParseAddr("fd00::1")}
		}
		return nil
	})
	dir := t.TempDir()
	hcl := fmt.Sprintf(`
host {
  admin_socket     = "run/host.sock"
  approval_timeout = "10s"
  egress_resolver  = %[4]q
}

plugin "caged" {
  path = %[1]q
  config {
    tool = "caged"
  }
  sandbox {
    egress = ["allowed.test:%[3]d", "rebind.test:%[3]d", "private.test:%[3]d", "v6.test:%[3]d", "127.0.0.1/32:%[3]d"]
  }
}

plugin "free" {
  path = %[1]q
  config {
    tool = "free"
  }
}

plugin "audit" {
  path = %[2]q
  config {
    path             = "run/audit/audit.log"
    record_arguments = true
  }
  sandbox {
    write = ["run/audit"]
  }
}
`, hostilePath(bins.Dir()), pluginPath("audit"), port, dns.Addr)
	config := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := cli(t, "validate", "-c", config)
	if code != 0 || !strings.Contains(out, "egress of caged (egress: allowed.test:") || !strings.Contains(out, "): proxy in netns") {
		t.Fatalf("host validate: exit %d\n%s%s", code, out, stderr)
	}
	h := startHost(t, config, 3)
	defer stopRunning(t, config, h)

	p := func(target string) hostileOutcome {
		return hostileCall(t, config, "caged", map[string]any{"what": "proxy", "addr": target})
	}
	// The allowed name, through the proxy.
	if o := p(fmt.Sprintf("allowed.test:%d", port)); !o.Done || o.Detail != "pong" {
		t.Fatalf("the allowed name through the proxy: %+v\n%s", o, h.stderr)
	}
	// The rebinding name: its first answer is dialled, the second (the
	// metadata address) refused; each connection is one lookup, and the
	// address checked is the address dialled.
	if o := p(fmt.Sprintf("rebind.test:%d", port)); !o.Done || o.Detail != "pong" {
		t.Fatalf("rebind.test, first answer: %+v", o)
	}
	if n := backend.Load(); n != 2 {
		t.Fatalf("the backend saw %d connections after two allowed, want 2", n)
	}
	refused := []string{
		fmt.Sprintf("other.test:%d", port),        // a name not listed
		fmt.Sprintf("127.0.0.1:%d", otherPort),    // the allowed name's address, another port
		"169.254.169.254:80",                      // the metadata address
		"10.1.2.3:443",                            // a private range, raw
		fmt.Sprintf("private.test:%d", port),      // a private range, by a listed name
		fmt.Sprintf("rebind.test:%d", port),       // its second answer: the metadata address
		fmt.Sprintf("[::1]:%d", port),             // IPv6 loopback, raw
		fmt.Sprintf("v6.test:%d", port),           // IPv6 loopback and unique local, by a listed name
		fmt.Sprintf("allowed.test:%d", otherPort), // a listed name, another port
	}
	for _, target := range refused {
		o := p(target)
		t.Logf("%s: %s", target, o.Detail)
		if o.Done || !strings.HasPrefix(o.Detail, "proxy: 403 ") {
			t.Errorf("%s through the proxy: %+v, want a 403 from the proxy", target, o)
		}
	}
	if n := backend.Load(); n != 2 {
		t.Errorf("the backend saw %d connections, want the 2 allowed", n)
	}
	if n := other.Load(); n != 0 {
		t.Errorf("the server on the other port saw %d connections", n)
	}
	if n := dns.Queries("other.test"); n != 0 {
		t.Errorf("the proxy looked up other.test, which is not listed (%d queries)", n)
	}

	// Around the proxy: a direct TCP connect and a DNS question to a
	// resolver of the plugin's choosing fail in its namespace, and work
	// from the unsandboxed twin.
	direct := fmt.Sprintf("127.0.0.1:%d", port)
	for _, a := range []map[string]any{{"what": "connect", "addr": direct}, {"what": "udp", "addr": dns.Addr}} {
		if o := hostileCall(t, config, "caged", a); o.Done {
			t.Errorf("caged %v: got out: %s", a, o.Detail)
		}
		if o := hostileCall(t, config, "free", a); !o.Done {
			t.Errorf("free %v: failed, so the attempt proves nothing: %s", a, o.Detail)
		}
	}

	// One audit line per connection asked of the proxy, allowed or not.
	var egressLines []auditlog.Line
	cagedCalls := map[string]bool{}
	text := waitAuditLinesWhere(t, filepath.Join(dir, "run", "audit", "audit.log"), func(l auditlog.Line) bool {
		return strings.HasPrefix(l.Tool, "egress:")
	}, 2+len(refused))
	for _, raw := range strings.Split(strings.TrimSpace(text), "\n") {
		l, err := auditlog.ParseLine([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(l.Tool, "egress:") {
			egressLines = append(egressLines, l)
		}
		if l.Tool == "caged" {
			cagedCalls[l.ID] = true
		}
	}
	allowed := 0
	for _, l := range egressLines {
		if l.Caller != "caged" {
			t.Errorf("egress line %d names caller %q", l.Seq, l.Caller)
		}
		// The call the connection happened during (one at a time here).
		var rec struct{ Call string }
		if err := json.Unmarshal(l.Arguments, &rec); err != nil || !cagedCalls[rec.Call] {
			t.Errorf("egress line %d names call %q, not one of caged's calls: %s", l.Seq, rec.Call, l.Arguments)
		}
		switch {
		case l.OK:
			allowed++
			if !strings.Contains(string(l.Arguments), `"address":"127.0.0.1:`) || strings.Contains(string(l.Arguments), `"bytes_in":0`) {
				t.Errorf("allowed line without its address or bytes: %s", l.Arguments)
			}
		case l.Code != "DENIED" || l.DecidedBy != "egress":
			t.Errorf("refused line %d: code %q decided by %q", l.Seq, l.Code, l.DecidedBy)
		}
	}
	if allowed != 2 || len(egressLines) != 2+len(refused) {
		t.Errorf("%d egress lines, %d allowed; want %d, 2:\n%s", len(egressLines), allowed, 2+len(refused), text)
	}

	// host status: the enforcement, and the refusals counted.
	out, stderr, code = cli(t, "status", "-c", config)
	if code != 0 || !strings.Contains(out, "egress: proxy in netns") ||
		!strings.Contains(out, fmt.Sprintf("caged: egress: 2 allowed, %d refused", len(refused))) {
		t.Errorf("host status: exit %d\n%s%s", code, out, stderr)
	}
}

// waitAuditLinesWhere waits for n lines of the audit log at path that
// match, and returns the whole log.
func waitAuditLinesWhere(t *testing.T, path string, match func(auditlog.Line) bool, n int) string {
	t.Helper()
	var b []byte
	got := 0
	if !testkit.Eventually(30*time.Second, func() bool {
		b, _ = os.ReadFile(path)
		got = 0
		for _, raw := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l, err := auditlog.ParseLine([]byte(raw)); err == nil && match(l) {
				got++
			}
		}
		return got >= n
	}) {
		t.Fatalf("%d matching audit lines, want %d:\n%s", got, n, b)
	}
	return string(b)
}
