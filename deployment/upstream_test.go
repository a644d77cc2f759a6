package deployment

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/tokenexchange"
)

const oauthHost = `host {
  mcp_auth {
    oauth {
      issuer   = "https://issuer.example"
      jwks_url = "https://issuer.example/jwks.json"
      audience = "https://gateway.example/mcp"
    }
  }
}
`

func bridgePlugin(url, auth string) string {
	return `plugin "gh" {
  path = "bin/ok"
  config {
    url = "` + url + `"
    auth {
` + auth + `
    }
  }
}
`
}

const exchangeBlock = `      token_exchange {
        token_url     = "https://issuer.example/token"
        audience      = "https://upstream.example"
        scope         = "repo:read"
        client_id     = "gateway"
        client_secret = "s3cret"
      }`

func TestParseTokenExchange(t *testing.T) {
	t.Parallel()
	d := parseClean(t, oauthHost+bridgePlugin("https://upstream.example/mcp", exchangeBlock))
	u := d.Plugins[0].Upstream
	want := &tokenexchange.Upstream{Plugin: "gh", URL: "https://upstream.example/mcp", Mode: tokenexchange.Exchange,
		TokenURL: "https://issuer.example/token", Audience: "https://upstream.example", Scope: "repo:read", ClientID: "gateway", ClientSecret: "s3cret"}
	if u == nil || *u != *want {
		t.Fatalf("Upstream = %+v; want %+v", u, want)
	}
	cfg := d.Plugins[0].PluginConfig()
	if strings.Contains(string(cfg), "s3cret") || !strings.Contains(string(cfg), "token_exchange") {
		t.Errorf("the plugin's config %s holds the client secret, or lost its auth block", cfg)
	}
	var m map[string]any
	if err := json.Unmarshal(cfg, &m); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(u.String(), "s3cret") {
		t.Errorf("the upstream prints its secret: %s", u)
	}
}

func TestParseTokenExchangeRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ src, want string }{
		{bridgePlugin("https://upstream.example/mcp", exchangeBlock), "token_exchange without OAuth: Plugin \"gh\" exchanges its callers' OAuth access tokens, but the host block has no mcp_auth { oauth { … } }"},
		{oauthHost + bridgePlugin("http://upstream.example/mcp", exchangeBlock), "Upstream without TLS: Plugin \"gh\": url \"http://upstream.example/mcp\""},
		{oauthHost + bridgePlugin("https://upstream.example/mcp", strings.Replace(exchangeBlock, "https://issuer.example/token", "http://issuer.example/token", 1)), "Invalid token_url"},
		{oauthHost + bridgePlugin("https://upstream.example/mcp", strings.Replace(exchangeBlock, `audience      = "https://upstream.example"`, "", 1)), "Incomplete token_exchange block: Plugin \"gh\": token_exchange needs audience."},
		{oauthHost + bridgePlugin("https://upstream.example/mcp", exchangeBlock+"\n      static {}"), "Invalid auth block"},
	} {
		_, diags := Parse(writeDeployment(t, c.src))
		if out := Format(diags); !strings.Contains(out, c.want) {
			t.Errorf("diagnostics:\n%s\nwant %q", out, c.want)
		}
	}
	// Loopback over http is fine (a local upstream), as is client
	// credentials without OAuth.
	cc := strings.Replace(exchangeBlock, "token_exchange", "client_credentials", 1)
	d := parseClean(t, bridgePlugin("http://127.0.0.1:9/mcp", cc))
	if u := d.Plugins[0].Upstream; u == nil || u.Mode != tokenexchange.ClientCredentials {
		t.Errorf("Upstream = %+v; want client credentials", u)
	}
}
