package main

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testcert"
)

// bearer adds a credential to every request.
type bearer struct {
	key  string
	next http.RoundTripper
}

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.key)
	return b.next.RoundTrip(r)
}

// TestMCPSharedOverTLSWithKeys: MCP served on all interfaces, over TLS and
// to API keys only (made with `host key add`). A reader key lists the
// tools and reads, and is denied by a rule about its group; a writer key
// is not; a request without a key, with an unknown key, or in plain HTTP
// never reaches the pipeline; the audit log names each key's principal.
func TestMCPSharedOverTLSWithKeys(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	cert, key, pool := testcert.Write(t, dir)
	keysFile := filepath.Join(dir, "keys.hcl")
	newKey := func(name string, args ...string) string {
		out, stderr, code := cli(t, append([]string{"key", "add", name, "-f", keysFile}, args...)...)
		if code != 0 || !strings.HasPrefix(out, "pk_") {
			t.Fatalf("host key add %s: exit %d %q %s", name, code, out, stderr)
		}
		return strings.TrimSpace(out)
	}
	reader := newKey("reader-bot", "--attribute", "group:readers")
	writer := newKey("ann", "--kind", "user", "--attribute", "group:writers")

	ln, err := net.Listen("tcp", "0.0.0.0:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	config := deploymentFileWith(t, dir, deploymentTweaks{
		host: fmt.Sprintf("  mcp = \"0.0.0.0:%d\"\n  mcp_tls {\n    cert = %q\n    key  = %q\n  }\n  mcp_auth {\n    keys = %q\n  }\n", port, cert, key, keysFile),
		safetyRules: `    deny "readers-read" {
      tools   = ["list_dir"]
      callers = ["group:readers"]
    }
`,
	})
	running := startHost(t, config, len(shippedPlugins))
	endpoint := fmt.Sprintf("https://127.0.0.1:%d/mcp", port)
	transport := &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}
	defer transport.CloseIdleConnections()

	connect := func(key string) (*mcp.ClientSession, error) {
		client := mcp.NewClient(&mcp.Implementation{Name: "shared-agent", Version: "1"}, nil)
		return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer{key, transport}}}, nil)
	}
	rs, err := connect(reader)
	if err != nil {
		t.Fatalf("connect with the reader key: %v\n%s", err, running.stderr)
	}
	defer rs.Close()
	waitTools(t, ctx, rs, shippedTools...)
	if r := mcpCall(t, ctx, rs, "read_file", `{"path":"notes.md"}`); r.IsError {
		t.Errorf("reader read_file: %s", toolText(r))
	}
	if r := mcpCall(t, ctx, rs, "list_dir", `{"path":"."}`); !r.IsError || !strings.Contains(toolText(r), `denied by safety rule "readers-read"`) || !strings.Contains(toolText(r), "for agent:reader-bot") {
		t.Errorf("reader list_dir: isError %v %q", r.IsError, toolText(r))
	}
	ws, err := connect(writer)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if r := mcpCall(t, ctx, ws, "list_dir", `{"path":"."}`); r.IsError {
		t.Errorf("writer list_dir: %s", toolText(r))
	}

	// Refused before the MCP server: 401 and how to authenticate.
	for _, c := range []struct{ name, auth string }{{"no credential", ""}, {"an unknown key", "Bearer pk_" + strings.Repeat("A", 43)}, {"a key as basic auth", "Basic " + reader}} {
		req, _ := http.NewRequest("POST", endpoint, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"notes.md"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.auth != "" {
			req.Header.Set("Authorization", c.auth)
		}
		resp, err := (&http.Client{Transport: transport}).Do(req)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Bearer") {
			t.Errorf("%s: %d %q, want 401 with WWW-Authenticate: Bearer", c.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	// Plain HTTP to the TLS port carries nothing to the server.
	resp, err := http.Post(fmt.Sprintf("http://127.0.0.1:%d/mcp", port), "application/json", strings.NewReader(`{}`))
	if err == nil {
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("plain HTTP: %d, want 400 (a TLS server's answer to plain HTTP)", resp.StatusCode)
		}
	}

	// The audit log: three calls, each for its key's principal, and none
	// of the refused requests.
	logPath := filepath.Join(dir, "run", "audit.log")
	var log string
	for deadline := time.Now().Add(30 * time.Second); strings.Count(log, "\n") < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("audit log:\n%s", log)
		}
		b, _ := os.ReadFile(logPath)
		log = string(b)
	}
	time.Sleep(200 * time.Millisecond)
	b, _ := os.ReadFile(logPath)
	log = string(b)
	if n := strings.Count(log, "\n"); n != 3 {
		t.Errorf("%d audit lines, want 3:\n%s", n, log)
	}
	for _, want := range []string{`"principal":"reader-bot","principal_kind":"agent","tool":"read_file"`, `"principal":"reader-bot","principal_kind":"agent","tool":"list_dir"`, `"principal":"ann","principal_kind":"user","tool":"list_dir"`} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %s:\n%s", want, log)
		}
	}
}
