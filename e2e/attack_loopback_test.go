package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// mcpClientEnv makes the test binary an MCP HTTP client of the URL it
// holds (runAsMCPClient), so that a test can run one as another user.
const mcpClientEnv = "PLUGKIT_TEST_MCP_CLIENT"

// runAsMCPClient, when the test binary was started as a client, sends the
// attack's requests (initialize, then a write_file call without a session)
// and prints each answer's status and body on a line; it exits.
func runAsMCPClient() {
	url := os.Getenv(mcpClientEnv)
	if url == "" {
		return
	}
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"elicitation":{}},"clientInfo":{"name":"intruder","version":"1"}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"write_file","arguments":{"path":"owned.txt","content":"pwned"}}}`,
	} {
		req, _ := http.NewRequest("POST", url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			fmt.Printf("error %v\n", err)
			os.Exit(1)
		}
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		fmt.Printf("%d %s\n", resp.StatusCode, strings.ReplaceAll(strings.TrimSpace(string(b)), "\n", " "))
	}
	os.Exit(0)
}

// otherUserBinary copies the test binary where another user can run it,
// for the tests that start it as that user.
func otherUserBinary(t *testing.T) string {
	t.Helper()
	helperDir, err := os.MkdirTemp("", "plugkit-intruder-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(helperDir) })
	if err := os.Chmod(helperDir, 0o755); err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(helperDir, "intruder")
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}

// TestAttackLoopbackMCPOtherUser: with MCP on loopback and no mcp_auth,
// another local user connected, called write_file and approved its own
// question, as the host's user, and the audit line named no principal.
// Now a client running as another user (nobody, the test binary re-run
// with its credentials) is refused with 401 and told to configure
// mcp_auth, and nothing it sent reaches the pipeline; the host's own
// user is served, and its calls are audited as that local user.
func TestAttackLoopbackMCPOtherUser(t *testing.T) {
	needShippedDeployment(t)
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root, to run a client as another user")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	config := deploymentFileWith(t, dir, deploymentTweaks{host: fmt.Sprintf("  mcp = %q\n", addr)})
	running := startHost(t, config, len(shippedPlugins))
	url := "http://" + addr + "/mcp"

	cmd := exec.CommandContext(ctx, otherUserBinary(t))
	cmd.Env = []string{mcpClientEnv + "=" + url}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the other user's client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 2 {
		t.Fatalf("the other user's client printed %q", out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, "401 ") || !strings.Contains(l, "from uid 65534") || !strings.Contains(l, "configure an mcp_auth block") {
			t.Errorf("the other user got %q, want 401 saying to configure mcp_auth", l)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "owned.txt")); err == nil {
		t.Error("the other user's write_file wrote its file")
	}

	// The host's own user is served, and named in the audit line.
	client := mcp.NewClient(&mcp.Implementation{Name: "owner", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect as the host's user: %v\n%s", err, running.stderr)
	}
	defer cs.Close()
	waitTools(t, ctx, cs, "list_dir")
	if r := mcpCall(t, ctx, cs, "list_dir", `{"path":"."}`); r.IsError {
		t.Fatalf("list_dir as the host's user: %s", toolText(r))
	}
	me := admin.LocalPrincipal(os.Geteuid())
	text := waitAuditLines(t, filepath.Join(dir, "run", "audit", "audit.log"), 1)
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		l, err := auditlog.ParseLine([]byte(line))
		if err != nil {
			t.Fatal(err)
		}
		if l.Principal != me.ID || l.PrincipalKind != "local" {
			t.Errorf("audit line %d (%s): principal %q of kind %q, want %q local", l.Seq, l.Tool, l.Principal, l.PrincipalKind, me.ID)
		}
		if l.Tool == "write_file" {
			t.Errorf("the other user's call reached the audit: %s", line)
		}
	}
}

// TestAttackPluginCallsLoopbackMCP: a plugin runs as the host's user, so
// the uid check alone served one that could reach the loopback MCP
// listener (unsandboxed, or sandboxed with a network that allows the
// port) as the local user: it could call any tool, its own call's
// approval included. Now such a connection is refused with 403 naming the
// plugin, and nothing it asked for runs; a client of the host's user that
// is no plugin is still served.
func TestAttackPluginCallsLoopbackMCP(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	_, port, _ := strings.Cut(addr, ":")
	netted := fmt.Sprintf(`
plugin "netted" {
  path = %q
  config {
    tool = "netted"
  }
  sandbox {
    network = [%s]
  }
}
`, hostilePath(bins.Dir()), port)
	config := hostileDeployment(t, dir, fmt.Sprintf("  mcp = %q\n", addr), netted)
	h := startHost(t, config, 3)
	defer stopRunning(t, config, h)
	url := "http://" + addr + "/mcp"

	for _, tool := range []string{"free", "netted"} {
		t.Run(tool, func(t *testing.T) {
			target := filepath.Join(dir, "pwned-by-"+tool+".txt")
			args, _ := json.Marshal(map[string]any{"what": "write", "path": target})
			o := hostileCall(t, config, tool, map[string]any{"what": "mcp", "addr": url, "tool": "free", "arguments": json.RawMessage(args)})
			t.Logf("%s", o.Detail)
			if o.Done {
				t.Errorf("the plugin's call through MCP was served: %s", o.Detail)
			}
			if !strings.HasPrefix(o.Detail, "403 ") || !strings.Contains(o.Detail, "from a plugin") {
				t.Errorf("the plugin got %q, want 403 saying it is a plugin", o.Detail)
			}
			if _, err := os.Stat(target); err == nil {
				t.Errorf("the plugin's call through MCP wrote %s", target)
			}
		})
	}

	// A client of the host's user that is no plugin (this test) is served.
	client := mcp.NewClient(&mcp.Implementation{Name: "owner", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connect as the host's user: %v\n%s", err, h.stderr)
	}
	defer cs.Close()
	waitTools(t, ctx, cs, "free")
	if r := mcpCall(t, ctx, cs, "free", `{"what":"fds"}`); r.IsError {
		t.Fatalf("a call as the host's user: %s", toolText(r))
	}
}
