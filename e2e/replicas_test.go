package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A replica is one `host run` of the deployments the tests of several
// hosts share: a plugin "slow" whose tool nap sleeps a while and returns
// "slept", and a critical audit plugin that records every call's
// arguments, so that a test can tell from the log which of its calls ran.

// replicaOptions vary a replica.
type replicaOptions struct {
	nap      time.Duration // how long nap sleeps
	shutdown string        // shutdown_timeout; "" for the default
	policy   string        // lines added to the policy block
	host     string        // lines added to the host block
}

type replica struct {
	name        string
	dir, config string
	mcp         string // host:port
	metrics     string // host:port
	audit       string // the audit log's path
	run         *running
}

// startReplica writes a replica's deployment into a folder of its own and
// starts it, waiting until both plugins are ACTIVE.
func startReplica(t *testing.T, name, testplugin string, o replicaOptions) *replica {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := &replica{name: name, dir: dir, config: filepath.Join(dir, "config.hcl"),
		mcp: freeLoopbackAddr(t), metrics: freePort(t), audit: filepath.Join(dir, "run", "audit.log")}
	shutdown := ""
	if o.shutdown != "" {
		shutdown = fmt.Sprintf("  shutdown_timeout = %q\n", o.shutdown)
	}
	hcl := fmt.Sprintf(`host {
  admin_socket = "run/host.sock"
  mcp          = %q
  metrics      = %q
%s%s  policy {
    timeout = true
%s  }
}

plugin "slow" {
  path = %q
  config {
    spec = {
      name  = "slow"
      tools = [{ name = "nap", description = "sleeps, then says slept", body = "sleep", sleep = %d }]
    }
  }
}

plugin "audit" {
  path     = %q
  critical = true
  config {
    path             = "run/audit.log"
    record_arguments = true
  }
}
`, r.mcp, r.metrics, shutdown, o.host, o.policy, testplugin, o.nap.Nanoseconds(), pluginPath("audit"))
	if err := os.WriteFile(r.config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	r.run = startHost(t, r.config, 2)
	return r
}

// auditRecord is what the replica tests read of an audit line.
type auditRecord struct {
	ID    string `json:"id"`
	Tool  string `json:"tool"`
	OK    bool   `json:"ok"`
	Code  string `json:"code"`
	Token string // the call's "token" argument
}

// auditRecords reads an audit log's lines.
func auditRecords(t *testing.T, path string) []auditRecord {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []auditRecord
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var l struct {
			auditRecord
			Arguments struct {
				Token string `json:"token"`
			} `json:"arguments"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s line %d: %v", path, n, err)
		}
		l.auditRecord.Token = l.Arguments.Token
		out = append(out, l.auditRecord)
	}
	return out
}

// connectMCP opens an MCP session with the replica behind endpoint: of
// 2025-11-25, the protocol with sessions these tests are about (a
// 2026-07-28 client has none; stateless_e2e_test.go).
func connectMCP(ctx context.Context, endpoint string, hc *http.Client) (*mcp.ClientSession, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "replica-test", Version: "1"}, nil)
	return client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

// nap calls the nap tool with token.
func nap(ctx context.Context, cs *mcp.ClientSession, token string) (*mcp.CallToolResult, error) {
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"token": token}})
}

// outcomes collects what the clients saw, by token.
type outcomes struct {
	mu sync.Mutex
	m  map[string]outcome
}

type outcome struct {
	kind string // "ok", "refused" or "error"
	text string
	end  time.Time
}

func (o *outcomes) add(token string, oc outcome) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.m == nil {
		o.m = map[string]outcome{}
	}
	o.m[token] = oc
}

// judge classes a call's answer.
func judge(r *mcp.CallToolResult, err error) outcome {
	now := time.Now()
	switch {
	case err != nil:
		return outcome{kind: "error", text: err.Error(), end: now}
	case !r.IsError && strings.Contains(toolText(r), "slept"):
		return outcome{kind: "ok", end: now}
	case r.IsError && strings.Contains(toolText(r), "shutting down"):
		return outcome{kind: "refused", text: toolText(r), end: now}
	}
	return outcome{kind: "error", text: fmt.Sprintf("isError %v: %s", r.IsError, toolText(r)), end: now}
}
