package e2e

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// A 2026-07-28 client over streamable HTTP is served without a session by
// `host run`: two replicas sharing one mcp_state_key, the client's retry
// after an Ask sent to the other replica, as a load balancer without
// affinity may; a retry whose requestState was changed is refused; and a
// 2025-11-25 client on the same listener still keeps a session and is
// asked within it.

// statelessReplica is a `host run` whose tool nap is destructive, so that
// the safety plugin asks before each call.
type statelessReplica struct {
	mcp   string
	audit string
}

func startStatelessReplica(t *testing.T, testplugin, keyFile string) *statelessReplica {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	r := &statelessReplica{mcp: freeLoopbackAddr(t), audit: filepath.Join(dir, "run", "audit.log")}
	hcl := fmt.Sprintf(`host {
  admin_socket     = "run/host.sock"
  mcp              = %q
  mcp_state_key    = %q
  approval_timeout = "30s"
}

plugin "slow" {
  path = %q
  config {
    spec = {
      name  = "slow"
      tools = [{ name = "nap", description = "says slept", body = "sleep", sleep = 1000000, destructive = true }]
    }
  }
}

plugin "safety" {
  path     = %q
  critical = true
  config {
    ask_destructive = true
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
`, r.mcp, keyFile, testplugin, pluginPath("safety"), pluginPath("audit"))
	config := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	startHost(t, config, 3)
	return r
}

// retryRouter sends a request that carries a requestState to retry and
// every other to first; it notes every Mcp-Session-Id either way, and may
// change the requestState on the way.
type retryRouter struct {
	first, retry string
	tamper       bool
	rt           *http.Transport

	mu       sync.Mutex
	sessions []string
	retries  int
}

func (r *retryRouter) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	out := req.Clone(req.Context())
	out.URL.Host, out.Host = r.first, r.first
	var msg struct {
		Params map[string]any `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil {
		if state, ok := msg.Params["requestState"].(string); ok {
			out.URL.Host, out.Host = r.retry, r.retry
			r.mu.Lock()
			r.retries++
			r.mu.Unlock()
			if r.tamper {
				b := []byte(state)
				b[len(b)/2] ^= 1 // a base64url character to another one
				body = bytes.Replace(body, []byte(state), b, 1)
			}
		}
	}
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	res, err := r.rt.RoundTrip(out)
	r.mu.Lock()
	defer r.mu.Unlock()
	if id := req.Header.Get("Mcp-Session-Id"); id != "" {
		r.sessions = append(r.sessions, id)
	}
	if err == nil && res.Header.Get("Mcp-Session-Id") != "" {
		r.sessions = append(r.sessions, res.Header.Get("Mcp-Session-Id"))
	}
	return res, err
}

func TestStatelessAcrossReplicas(t *testing.T) {
	needShippedDeployment(t)
	helpers := t.TempDir()
	testplugin := buildTestPlugin(t)
	key := make([]byte, 32)
	rand.Read(key)
	keyFile := filepath.Join(helpers, "state.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a := startStatelessReplica(t, testplugin, keyFile)
	b := startStatelessReplica(t, testplugin, keyFile)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rt := &http.Transport{}
	defer rt.CloseIdleConnections()
	user := &mcpUser{approve: true}
	connect := func(t *testing.T, r *retryRouter, version string) *mcp.ClientSession {
		t.Helper()
		client := mcp.NewClient(&mcp.Implementation{Name: "stateless-agent", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: user.handle})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + r.first + "/mcp", HTTPClient: &http.Client{Transport: r}},
			&mcp.ClientSessionOptions{ProtocolVersion: version})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	napArgs := func(token string) *mcp.CallToolParams {
		return &mcp.CallToolParams{Name: "nap", Arguments: map[string]any{"token": token}}
	}

	t.Run("an Ask answered on the other replica", func(t *testing.T) {
		r := &retryRouter{first: a.mcp, retry: b.mcp, rt: rt}
		cs := connect(t, r, "")
		if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
			t.Fatalf("negotiated %s, want 2026-07-28", v)
		}
		res, err := cs.CallTool(ctx, napArgs("across"))
		if err != nil || res.IsError || toolText(res) != "slept" {
			t.Fatalf("nap: %v %q", err, resultText(res))
		}
		if q := user.asked(); len(q) != 1 || !strings.Contains(q[0], "nap is destructive") {
			t.Fatalf("the user was asked %q", q)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(r.sessions) != 0 || r.retries != 1 {
			t.Fatalf("session ids %q and %d retries; want none and 1", r.sessions, r.retries)
		}
		if got := waitCodes(t, a.audit, "across", "ABORTED"); got != "ABORTED" {
			t.Errorf("replica A recorded %q, want the call that asked ABORTED", got)
		}
		if got := waitCodes(t, b.audit, "across", "ok"); got != "ok" {
			t.Errorf("replica B recorded %q, want the retry ok", got)
		}
	})

	t.Run("a changed requestState is refused", func(t *testing.T) {
		r := &retryRouter{first: a.mcp, retry: b.mcp, rt: rt, tamper: true}
		cs := connect(t, r, "")
		_, err := cs.CallTool(ctx, napArgs("tampered"))
		if err == nil || !strings.Contains(err.Error(), "requestState is not one this gateway issued") {
			t.Fatalf("nap with a changed requestState: %v", err)
		}
		if got := tokenCodes(t, b.audit, "tampered"); got != "" {
			t.Errorf("replica B recorded %q for the refused retry, want nothing run", got)
		}
	})

	t.Run("a 2025-11-25 client keeps its session", func(t *testing.T) {
		r := &retryRouter{first: a.mcp, retry: b.mcp, rt: rt}
		cs := connect(t, r, "2025-11-25")
		before := len(user.asked())
		res, err := cs.CallTool(ctx, napArgs("session"))
		if err != nil || res.IsError || toolText(res) != "slept" {
			t.Fatalf("nap: %v %q", err, resultText(res))
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if cs.ID() == "" || len(r.sessions) == 0 || r.retries != 0 || len(user.asked()) != before+1 {
			t.Fatalf("session %q, ids seen %d, %d retries, asked %d times; want a session asked by elicitation", cs.ID(), len(r.sessions), r.retries, len(user.asked())-before)
		}
		if got := waitCodes(t, a.audit, "session", "ok"); got != "ok" {
			t.Errorf("replica A recorded %q, want one ok", got)
		}
	})
}

// tokenCodes is the outcomes an audit log holds for the calls with token,
// in order ("ok" for one that succeeded), joined by spaces.
func tokenCodes(t *testing.T, path, token string) string {
	t.Helper()
	var codes []string
	for _, rec := range auditRecords(t, path) {
		if rec.Token != token {
			continue
		}
		if rec.OK {
			codes = append(codes, "ok")
		} else {
			codes = append(codes, rec.Code)
		}
	}
	return strings.Join(codes, " ")
}

// waitCodes is tokenCodes once it is want, or after a while what it is
// then: the audit line of a call may be written just after its answer.
func waitCodes(t *testing.T, path, token, want string) string {
	t.Helper()
	var got string
	testkit.Eventually(10*time.Second, func() bool {
		got = tokenCodes(t, path, token)
		return got == want
	})
	return got
}
