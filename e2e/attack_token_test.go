package e2e

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/mcptestserver"
	"github.com/plugkit-go/plugkit/internal/testkit/testissuer"
)

// TestAttackTokenCacheWrongSecret runs the real host with two bridge
// plugins in front of one upstream, with the same client_credentials
// settings but for the client secret: "up" has the right one, "forger" a
// wrong one. Once up's call has put a token in the cache, forger's call
// must still be DENIED with the token endpoint's refusal and reach
// nothing: the cache is keyed by plugin, client and secret.
func TestAttackTokenCacheWrongSecret(t *testing.T) {
	needShippedDeployment(t)
	iss := testissuer.Start(t)
	rec := &bearers{}
	srv := mcptestserver.New(io.Discard)
	up := httptest.NewServer(rec.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil)))
	t.Cleanup(up.Close)
	t.Cleanup(up.CloseClientConnections)

	dir := t.TempDir()
	bridge := bins.Build(t, "plugins/mcp", module+"plugins/mcp")
	block := func(name, secret string) string {
		return fmt.Sprintf(`
plugin %q {
  path = %q
  config {
    url         = %q
    trust_hints = true
    auth {
      client_credentials {
        token_url     = %q
        audience      = "upstream-api"
        scope         = "tools"
        client_id     = %q
        client_secret = %q
      }
    }
  }
  sandbox {
    network = [%s]
  }
}
`, name, bridge, up.URL, iss.URL+"/token", iss.ClientID, secret, up.URL[strings.LastIndex(up.URL, ":")+1:])
	}
	config := deploymentFileWith(t, dir, deploymentTweaks{more: block("up", iss.ClientSecret) + block("forger", "wrong")})
	running := startHost(t, config, len(shippedPlugins)+2)

	if r, code := callJSON(t, config, "up_echo", `{"message":"hi"}`); code != 0 || !r.OK {
		t.Fatalf("up's call: exit %d, %+v %+v\n%s", code, r, r.Error, running.stderr)
	}
	if n := len(iss.Grants()); n != 1 {
		t.Fatalf("%d grants for up's call, want 1", n)
	}
	r, code := callJSON(t, config, "forger_echo", `{"message":"as up?"}`)
	if r.Error == nil {
		t.Fatalf("forger's call with a wrong secret succeeded (exit %d): %s", code, r.Value)
	}
	t.Logf("forger's call with a wrong secret: exit %d, %s %s", code, r.Error.Code, r.Error.Message)
	if r.OK || r.Error.Code != "DENIED" || !strings.Contains(r.Error.Message, "invalid_client") {
		t.Errorf("forger's call: %s %q; want DENIED with the token endpoint's invalid_client", r.Error.Code, r.Error.Message)
	}
	calls, _ := rec.snapshot()
	if len(calls) != 1 {
		t.Errorf("the upstream got %d tool calls, want 1 (up's): forger's call reached it with a cached token", len(calls))
	}
	if n := len(iss.Grants()); n != 1 {
		t.Errorf("%d grants, want still 1", n)
	}
}
