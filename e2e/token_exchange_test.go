package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/mcptestserver"
	"github.com/plugkit-go/plugkit/internal/testkit/testissuer"
)

// bearers records the Authorization header of every request an upstream
// MCP server gets, and separately those of its tools/call requests.
type bearers struct {
	mu    sync.Mutex
	calls []string
	all   []string
}

func (b *bearers) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(strings.NewReader(string(body)))
		a := r.Header.Get("Authorization")
		b.mu.Lock()
		b.all = append(b.all, a)
		if strings.Contains(string(body), `"tools/call"`) {
			b.calls = append(b.calls, a)
		}
		b.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (b *bearers) snapshot() (calls, all []string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]string(nil), b.calls...), append([]string(nil), b.all...)
}

// TestTokenExchangeThroughTheGateway runs the real host and bridge plugin
// in front of an HTTP MCP upstream that records each request's bearer,
// with the test issuer as the clients' OAuth issuer and the token
// endpoint: two principals' calls reach the upstream with two exchanged
// tokens of the upstream's audience, never with the clients' own tokens;
// a repeat call is served from the cache (no new exchange); a call whose
// subject token the token endpoint refuses (expired) is DENIED naming the
// upstream, and reaches nothing.
func TestTokenExchangeThroughTheGateway(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	iss := testissuer.Start(t)
	rec := &bearers{}
	srv := mcptestserver.New(io.Discard)
	up := httptest.NewServer(rec.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil)))
	t.Cleanup(up.Close)
	t.Cleanup(up.CloseClientConnections)

	dir := t.TempDir()
	bridge := bins.Build(t, "plugins/mcp", module+"plugins/mcp")
	addr := freeLoopbackAddr(t)
	audience := "http://" + addr + "/mcp"
	config := deploymentFileWith(t, dir, deploymentTweaks{
		host: fmt.Sprintf("  mcp = %q\n  mcp_auth {\n    oauth {\n      issuer   = %q\n      jwks_url = %q\n      audience = %q\n    }\n  }\n", addr, iss.URL, iss.JWKSURL, audience),
		more: fmt.Sprintf(`
plugin "up" {
  path = %q
  config {
    url         = %q
    trust_hints = true
    auth {
      token_exchange {
        token_url     = %q
        audience      = "upstream-api"
        scope         = "tools"
        client_id     = %q
        client_secret = %q
      }
    }
  }
  sandbox {
    network = [%[6]s]
  }
}

# The same upstream, the gateway's client secret wrong: every exchange
# fails, and the static header is never sent in its place.
plugin "bad" {
  path = %[1]q
  config {
    url         = %[2]q
    trust_hints = true
    headers {
      Authorization = "Bearer static-identity"
    }
    auth {
      token_exchange {
        token_url     = %[3]q
        audience      = "upstream-api"
        client_id     = %[4]q
        client_secret = "wrong"
      }
    }
  }
  sandbox {
    network = [%[6]s]
  }
}

# A plugin that calls tools back through the host while it serves a call:
# it must not get the caller's upstream token used for it.
plugin "agent" {
  path = %[7]q
  config {
    spec    = { name = "agent" }
    control = "agent_ctl"
  }
}
`, bridge, up.URL, iss.URL+"/token", iss.ClientID, iss.ClientSecret, up.URL[strings.LastIndex(up.URL, ":")+1:], buildTestPlugin(t)),
	})
	running := startHost(t, config, len(shippedPlugins)+3)

	connect := func(token string) *mcp.ClientSession {
		t.Helper()
		client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: audience,
			HTTPClient: &http.Client{Transport: bearer{token, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v\n%s", err, running.stderr)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	own := map[string]string{}
	sessions := map[string]*mcp.ClientSession{}
	for _, who := range []string{"alice", "bob"} {
		own[who] = iss.Token(t, jwt.MapClaims{"sub": who, "aud": audience})
		sessions[who] = connect(own[who])
	}
	waitTools(t, ctx, sessions["alice"], "up_echo")

	// Each principal's call reaches the upstream with its own exchanged
	// token.
	for _, who := range []string{"alice", "bob"} {
		if r := mcpCall(t, ctx, sessions[who], "up_echo", `{"message":"hi"}`); r.IsError {
			t.Fatalf("%s's call: %s\n%s", who, toolText(r), running.stderr)
		}
	}
	grants := iss.Grants()
	calls, _ := rec.snapshot()
	if len(grants) != 2 || len(calls) != 2 {
		t.Fatalf("%d exchanges and %d upstream calls for two principals' calls, want 2 and 2: %+v", len(grants), len(calls), grants)
	}
	for i, who := range []string{"alice", "bob"} {
		g := grants[i]
		if g.Type != "token-exchange" || g.Subject != who || g.Audience != "upstream-api" || g.Scope != "tools" {
			t.Errorf("exchange %d: %+v, want a token exchange for %s, audience upstream-api, scope tools", i, g, who)
		}
		if calls[i] != "Bearer "+g.Token {
			t.Errorf("%s's call reached the upstream with %q, want the token exchanged for %s", who, short(calls[i]), who)
		}
	}
	if calls[0] == calls[1] {
		t.Error("both principals' calls reached the upstream with the same token")
	}

	// A repeat call: the cached token, no new exchange.
	if r := mcpCall(t, ctx, sessions["alice"], "up_echo", `{"message":"again"}`); r.IsError {
		t.Fatalf("alice's second call: %s", toolText(r))
	}
	if n := len(iss.Grants()); n != 2 {
		t.Errorf("a repeat call made a new exchange: %d exchanges", n)
	}
	if calls, _ := rec.snapshot(); len(calls) != 3 || calls[2] != calls[0] {
		t.Errorf("alice's repeat call reached the upstream with %q, want her cached token", short(calls[len(calls)-1]))
	}

	// A plugin serving alice's call calls the bridged tool back through
	// the host: that call is the plugin's, with no token of alice's to
	// exchange, so it is DENIED and reaches nothing.
	r := mcpCall(t, ctx, sessions["alice"], "agent_ctl", `{"op":"execute","tool":"up_echo","args":{"message":"as alice?"}}`)
	t.Logf("a plugin's call of the bridged tool, inside alice's call: %s", toolText(r))
	if text := toolText(r); !strings.Contains(text, "DENIED") || !strings.Contains(text, "no token for upstream") {
		t.Errorf("a plugin's call of the bridged tool inside alice's call: isError %v %q; want it DENIED for want of a token", r.IsError, text)
	}
	if calls, _ := rec.snapshot(); len(calls) != 3 {
		t.Errorf("the plugin's call reached the upstream: %d calls", len(calls))
	}
	if n := len(iss.Grants()); n != 2 {
		t.Errorf("the plugin's call made an exchange: %d exchanges", n)
	}

	// An exchange that fails (the token endpoint refuses the gateway's
	// client): DENIED, naming the upstream and the reason; the static
	// identity is not sent instead, and the call reaches nothing.
	r = mcpCall(t, ctx, sessions["alice"], "bad_echo", `{"message":"no"}`)
	if text := toolText(r); !r.IsError || !strings.Contains(text, "DENIED") || !strings.Contains(text, up.URL) || !strings.Contains(text, "invalid_client") {
		t.Errorf("a call whose exchange fails: isError %v %q; want DENIED naming the upstream and invalid_client", r.IsError, text)
	}
	t.Logf("a call whose exchange fails: %s", toolText(r))
	if calls, _ := rec.snapshot(); len(calls) != 3 {
		t.Errorf("the refused call reached the upstream: %d calls", len(calls))
	}

	// An expired subject token does not get that far: the front end
	// refuses it (401) before any call or exchange.
	expired := iss.Token(t, jwt.MapClaims{"sub": "carol", "aud": audience, "exp": time.Now().Add(-5 * time.Second).Unix()})
	client := mcp.NewClient(&mcp.Implementation{Name: "late", Version: "1"}, nil)
	if cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: audience,
		HTTPClient: &http.Client{Transport: bearer{expired, http.DefaultTransport}}}, nil); err == nil {
		cs.Close()
		t.Error("a client with an expired token was served")
	}
	if n := len(iss.Grants()); n != 2 {
		t.Errorf("%d exchanges after the refusals, want still 2", n)
	}

	// The clients' own tokens never reached the upstream, on any request.
	calls, all := rec.snapshot()
	for _, a := range all {
		for who, tok := range own {
			if strings.Contains(a, tok) {
				t.Errorf("%s's own token reached the upstream", who)
			}
		}
		if strings.Contains(a, expired) {
			t.Error("carol's own token reached the upstream")
		}
	}
	for _, a := range calls {
		if strings.Contains(a, "static-identity") {
			t.Error("a call reached the upstream with the static identity")
		}
	}
}

// short is a bearer header cut for a message.
func short(s string) string {
	if len(s) > 24 {
		return s[:24] + "…"
	}
	return s
}
