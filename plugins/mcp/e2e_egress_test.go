package main

import (
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testdns"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// TestFetchServerEgress: a small HTTP-fetching MCP server of our own
// (testdata/fetchserver.py, urllib, which honours the proxy variables)
// behind a bridge whose sandbox lists one host reaches that host through
// the bridge's egress proxy (a plain HTTP request with an absolute URL),
// and nothing else: a name not listed is refused by the proxy, and a URL
// the proxy variables send direct (127.0.0.1 is in NO_PROXY) finds no
// route in the namespace. The test's DNS server and a loopback HTTP
// server stand in for the outside.
func TestFetchServerEgress(t *testing.T) {
	needBinaries(t)
	// The system's python3: a version manager's shim is a shell script
	// that reaches into the home folder, outside the sandbox.
	python, err := exec.LookPath("/usr/bin/python3")
	if err != nil {
		testenv.Missing(t, "/usr/bin/python3: %v", err)
	}
	if python, err = filepath.EvalSymlinks(python); err != nil {
		t.Fatal(err)
	}
	script, err := filepath.Abs(filepath.Join("testdata", "fetchserver.py"))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from %s", r.Host)
	})}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	port := ln.Addr().(*net.TCPAddr).Port
	dns := testdns.Start(t, func(name string, _ int) []netip.Addr {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}
	})
	noLeaks(t)
	dir := t.TempDir()
	hcl := fmt.Sprintf(`
host {
  admin_socket     = "run/host.sock"
  approval_timeout = "5s"
  egress_resolver  = %q
}

plugin "fetcher" {
  path = %q
  config {
    command = [%q, %q]
    prefix  = "web"
  }
  sandbox {
    read   = [%q]
    exec   = [%q]
    egress = ["allowed.test:%d", "127.0.0.1/32:%d"]
  }
}
`, dns.Addr, bin("plugins/mcp"), python, script, filepath.Dir(script), python, port, port)
	config := filepath.Join(dir, "deployment.hcl")
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 1)
	fetch := func(url string) callResult { return h.call(t, "web_fetch", fmt.Sprintf(`{"url":%q}`, url)) }

	r := fetch(fmt.Sprintf("http://allowed.test:%d/", port))
	if !r.OK || !strings.Contains(string(r.Value), fmt.Sprintf("hello from allowed.test:%d", port)) {
		t.Fatalf("the allowed host: %+v %s\n%s", r, r.Value, h.log)
	}
	r = fetch(fmt.Sprintf("http://other.test:%d/", port))
	if r.OK || !strings.Contains(r.message()+string(r.Value), "403") {
		t.Errorf("a host not listed: %+v %s, want the proxy's 403", r, r.Value)
	}
	r = fetch(fmt.Sprintf("http://127.0.0.1:%d/", port))
	if r.OK || strings.Contains(r.message()+string(r.Value), "hello") {
		t.Errorf("a direct connection (NO_PROXY): %+v %s, want it to fail in the namespace", r, r.Value)
	}
	t.Logf("direct: %s %s", r.message(), r.Value)
	if n := dns.Queries("other.test"); n != 0 {
		t.Errorf("the proxy looked up other.test (%d queries)", n)
	}
}
