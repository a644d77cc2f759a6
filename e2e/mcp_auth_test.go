package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plugkit-go/plugkit/internal/testkit/testcert"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testissuer"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
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
	metricsAddr := freePort(t)
	config := deploymentFileWith(t, dir, deploymentTweaks{
		host: fmt.Sprintf("  metrics = %q\n  mcp = \"0.0.0.0:%d\"\n  mcp_tls {\n    cert = %q\n    key  = %q\n  }\n  mcp_auth {\n    keys = %q\n  }\n", metricsAddr, port, cert, key, keysFile),
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
	waitTools(t, ctx, rs, "search", "read_file", "write_file", "delete_file")
	if r := mcpCall(t, ctx, rs, "read_file", `{"path":"notes.md"}`); r.IsError {
		t.Errorf("reader read_file: %s", toolText(r))
	}
	// The rule denies readers every call of list_dir: it is hidden from
	// them, and a call of it is one of a tool that does not exist.
	mcpHidden(t, ctx, rs, "list_dir", `{"path":"."}`)
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
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(scrape(t, metricsAddr)))
	if err != nil {
		t.Fatal(err)
	}
	for reason, want := range map[string]float64{"missing": 2, "invalid": 1} {
		if got, _ := value(families, "plugkit_mcp_auth_refusals_total", map[string]string{"reason": reason}); got != want {
			t.Errorf("refusals for a %s credential: %v, want %v", reason, got, want)
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
	logPath := filepath.Join(dir, "run", "audit", "audit.log")
	waitAuditLines(t, logPath, 3)
	time.Sleep(200 * time.Millisecond) // for a line that should not come
	b, _ := os.ReadFile(logPath)
	log := string(b)
	if n := strings.Count(log, "\n"); n != 3 {
		t.Errorf("%d audit lines, want 3:\n%s", n, log)
	}
	for _, want := range []string{`"principal":"reader-bot","principal_kind":"agent","tool":"read_file"`, `"principal":"reader-bot","principal_kind":"agent","tool":"list_dir"`, `"principal":"ann","principal_kind":"user","tool":"list_dir"`} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %s:\n%s", want, log)
		}
	}

	t.Run("a client made with the TypeScript SDK", func(t *testing.T) {
		node := testenv.LookPath(t, "node")
		script, err := filepath.Abs("../plugins/mcp/testdata/servers/ts-client.mjs")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(filepath.Dir(script), "node_modules", "@modelcontextprotocol", "sdk")); err != nil {
			testenv.Missing(t, "the TypeScript MCP SDK: run `npm ci` in plugins/mcp/testdata/servers")
		}
		ts := func(key string) (string, error) {
			cmd := exec.CommandContext(ctx, node, script, endpoint, key, "read_file", `{"path":"notes.md"}`)
			cmd.Env = append(os.Environ(), "NODE_EXTRA_CA_CERTS="+cert)
			out, err := cmd.Output()
			if ee, ok := err.(*exec.ExitError); ok {
				return string(out), fmt.Errorf("%v: %s", err, ee.Stderr)
			}
			return string(out), err
		}
		out, err := ts(writer)
		if err != nil || !strings.Contains(out, `"read_file"`) || !strings.Contains(out, "first notes") {
			t.Fatalf("the TypeScript client with a key: %v\n%s", err, out)
		}
		if out, err := ts("pk_" + strings.Repeat("B", 43)); err == nil {
			t.Errorf("the TypeScript client with an unknown key was served:\n%s", out)
		}
		if log := waitAuditLines(t, logPath, 4); !strings.Contains(log, `"principal":"ann","principal_kind":"user","tool":"read_file"`) {
			t.Errorf("the TypeScript client's call is not audited as ann's:\n%s", log)
		}
	})
}

// TestMCPOAuthTokens: MCP accepts an issuer's access tokens (checked
// against its published keys) and makes each call for the token's subject,
// with its groups; bad tokens are refused before the pipeline.
func TestMCPOAuthTokens(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	iss := testissuer.Start(t)
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	audience := "http://" + addr + "/mcp"
	config := deploymentFileWith(t, dir, deploymentTweaks{
		host: fmt.Sprintf("  mcp = %q\n  mcp_auth {\n    oauth {\n      issuer   = %q\n      jwks_url = %q\n      audience = %q\n      scopes   = [\"tools\"]\n    }\n  }\n", addr, iss.URL, iss.JWKSURL, audience),
		safetyRules: `    deny "readers-read" {
      tools   = ["list_dir"]
      callers = ["group:readers"]
    }
`,
	})
	running := startHost(t, config, len(shippedPlugins))
	connect := func(token string) *mcp.ClientSession {
		client := mcp.NewClient(&mcp.Implementation{Name: "oauth-agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: audience,
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, running.stderr)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	alice := connect(iss.Token(t, jwt.MapClaims{"sub": "alice", "aud": audience, "scope": "tools", "groups": []string{"readers"}}))
	waitTools(t, ctx, alice, "search", "read_file", "write_file", "delete_file")
	mcpHidden(t, ctx, alice, "list_dir", `{"path":"."}`)
	bob := connect(iss.Token(t, jwt.MapClaims{"sub": "bob", "aud": audience, "scope": "tools"}))
	if r := mcpCall(t, ctx, bob, "list_dir", `{"path":"."}`); r.IsError {
		t.Errorf("bob list_dir: %s", toolText(r))
	}
	for _, c := range []struct{ name, token string }{
		{"expired", iss.Token(t, jwt.MapClaims{"sub": "eve", "aud": audience, "scope": "tools", "exp": time.Now().Add(-time.Hour).Unix()})},
		{"for another audience", iss.Token(t, jwt.MapClaims{"sub": "eve", "aud": "http://elsewhere/mcp", "scope": "tools"})},
		{"signed by another key", iss.TokenSignedBy(t, testissuer.NewKey(t), jwt.MapClaims{"sub": "eve", "aud": audience, "scope": "tools"})},
		{"missing", ""},
	} {
		req, _ := http.NewRequest("POST", audience, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.token != "" {
			req.Header.Set("Authorization", "Bearer "+c.token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(resp.Header.Get("WWW-Authenticate"), "resource_metadata=") {
			t.Errorf("%s: %d %q", c.name, resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
	}
	log := waitAuditLines(t, filepath.Join(dir, "run", "audit", "audit.log"), 2)
	for _, want := range []string{`"principal":"alice","principal_kind":"user","tool":"list_dir"`, `"principal":"bob","principal_kind":"user","tool":"list_dir"`} {
		if !strings.Contains(log, want) {
			t.Errorf("audit log lacks %s:\n%s", want, log)
		}
	}
	if strings.Contains(log, "eve") {
		t.Errorf("a refused token reached the pipeline:\n%s", log)
	}
}

// waitAuditLines waits until the audit log at path has n lines (the audit
// plugin gets results on a stream, after the caller has its answer) and
// returns it.
func waitAuditLines(t *testing.T, path string, n int) string {
	t.Helper()
	var b []byte
	if !testkit.Eventually(30*time.Second, func() bool {
		b, _ = os.ReadFile(path)
		return strings.Count(string(b), "\n") >= n
	}) {
		t.Fatalf("%d audit lines, want %d:\n%s", strings.Count(string(b), "\n"), n, b)
	}
	return string(b)
}
