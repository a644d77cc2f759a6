package deployment

import (
	"encoding/json"
	"fmt"

	"github.com/hashicorp/hcl/v2"

	"github.com/plugkit-go/plugkit/tokenexchange"
)

// A plugin whose config has an auth block with token_exchange or
// client_credentials has the host obtain a token for its upstream on each
// call (tokenexchange): the host reads that block, and hands the plugin its
// config without client_secret.
type authSyntax struct {
	URL  string `json:"url"`
	Auth []struct {
		Static            []json.RawMessage `json:"static"`
		TokenExchange     []upstreamSyntax  `json:"token_exchange"`
		ClientCredentials []upstreamSyntax  `json:"client_credentials"`
		UserConsent       []consentSyntax   `json:"user_consent"`
	} `json:"auth"`
}

type upstreamSyntax struct {
	TokenURL     string `json:"token_url"`
	Audience     string `json:"audience"`
	Scope        string `json:"scope"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

// consentSyntax is a user_consent block: each user consents once, in a
// browser, to the upstream's authorization server, which the host finds
// from the upstream itself.
type consentSyntax struct {
	Scope        string `json:"scope"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

// configAt is where the config value at pointer was written, else the
// config block.
func (pl *Plugin) configAt(pointer string) hcl.Range {
	if pl.src != nil {
		if r, ok := pl.src.config[pointer]; ok {
			return r
		}
	}
	return pl.ConfigRange
}

// upstream reads pl's auth block into pl.Upstream, reporting what is
// wrong with it; a config of other types is left to the plugin's schema.
func (p *parser) upstream(pl *Plugin) {
	var s authSyntax
	if json.Unmarshal(pl.Config, &s) != nil || len(s.Auth) == 0 {
		return
	}
	if len(s.Auth) > 1 {
		p.errorf(pl.configAt("/auth/1"), "Duplicate auth block", "Plugin %q has more than one auth block; write one.", pl.Name)
		return
	}
	a := s.Auth[0]
	n := len(a.Static) + len(a.TokenExchange) + len(a.ClientCredentials) + len(a.UserConsent)
	if n != 1 {
		p.errorf(pl.configAt("/auth/0"), "Invalid auth block", "Plugin %q: an auth block holds exactly one of static, token_exchange, client_credentials or user_consent; it has %d.", pl.Name, n)
		return
	}
	if len(a.UserConsent) == 1 {
		p.consentUpstream(pl, s.URL, a.UserConsent[0])
		return
	}
	mode, list := tokenexchange.Exchange, a.TokenExchange
	if len(a.ClientCredentials) == 1 {
		mode, list = tokenexchange.ClientCredentials, a.ClientCredentials
	}
	if len(list) == 0 {
		return // static: the plugin's own headers
	}
	at := "/auth/0/" + string(mode) + "/0"
	u := list[0]
	ok := true
	if s.URL == "" {
		p.errorf(pl.configAt(at), "Auth without url", "Plugin %q: %s obtains a token for an upstream reached at url, and the config has no url.", pl.Name, mode)
		ok = false
	} else if err := checkHTTPS(s.URL); err != nil {
		p.errorf(pl.configAt("/url"), "Upstream without TLS", "Plugin %q: url %q %v: a token for the upstream must not travel in the clear.", pl.Name, s.URL, err)
		ok = false
	}
	for _, f := range []struct{ name, v string }{{"token_url", u.TokenURL}, {"audience", u.Audience}, {"client_id", u.ClientID}} {
		if f.v == "" {
			p.errorf(pl.configAt(at), "Incomplete "+string(mode)+" block", "Plugin %q: %s needs %s.", pl.Name, mode, f.name)
			ok = false
		}
	}
	if u.TokenURL != "" {
		if err := checkHTTPS(u.TokenURL); err != nil {
			p.errorf(pl.configAt(at+"/token_url"), "Invalid token_url", "Plugin %q: token_url %q %v.", pl.Name, u.TokenURL, err)
			ok = false
		}
	}
	if !ok {
		return
	}
	pl.Upstream = &tokenexchange.Upstream{Plugin: pl.Name, URL: s.URL, Mode: mode, TokenURL: u.TokenURL,
		Audience: u.Audience, Scope: u.Scope, ClientID: u.ClientID, ClientSecret: u.ClientSecret}
	pl.upstreamRange = pl.configAt(at)
}

// consentUpstream reads a user_consent block: the upstream's url over TLS
// (its tokens travel to it), the client, the scopes.
func (p *parser) consentUpstream(pl *Plugin, rawURL string, c consentSyntax) {
	at := "/auth/0/user_consent/0"
	if rawURL == "" {
		p.errorf(pl.configAt(at), "Auth without url", "Plugin %q: user_consent obtains each user's token for an upstream reached at url, and the config has no url.", pl.Name)
		return
	}
	if err := checkHTTPS(rawURL); err != nil {
		p.errorf(pl.configAt("/url"), "Upstream without TLS", "Plugin %q: url %q %v: a token for the upstream must not travel in the clear.", pl.Name, rawURL, err)
		return
	}
	if c.ClientSecret != "" && c.ClientID == "" {
		p.errorf(pl.configAt(at), "client_secret without client_id", "Plugin %q: user_consent has a client_secret but no client_id it belongs to.", pl.Name)
		return
	}
	pl.Upstream = &tokenexchange.Upstream{Plugin: pl.Name, URL: rawURL, Mode: tokenexchange.UserConsent,
		Scope: c.Scope, ClientID: c.ClientID, ClientSecret: c.ClientSecret}
	pl.upstreamRange = pl.configAt(at)
}

// checkUpstreams refuses token_exchange without mcp_auth oauth (there
// would be no caller's token to exchange), and user_consent without the
// host's user_consent block (there would be nowhere to come back to).
func (p *parser) checkUpstreams(d *Deployment) {
	for _, pl := range d.Plugins {
		if pl.Upstream != nil && pl.Upstream.Mode == tokenexchange.UserConsent && d.Host.UserConsent == nil {
			p.errorf(pl.upstreamRange, "user_consent without a callback", "Plugin %q asks each user's consent for its upstream, but the host block has no user_consent { listen = … key_file = … vault = … }: the browser would have nowhere to come back to, the tokens nowhere to be kept.", pl.Name)
		}
	}
	if d.Host.MCPAuth != nil && d.Host.MCPAuth.OAuth != nil {
		return
	}
	for _, pl := range d.Plugins {
		if pl.Upstream != nil && pl.Upstream.Mode == tokenexchange.Exchange {
			p.errorf(pl.upstreamRange, "token_exchange without OAuth", "Plugin %q exchanges its callers' OAuth access tokens, but the host block has no mcp_auth { oauth { … } }: no call would carry one.", pl.Name)
		}
	}
}

// PluginConfig is the config the plugin receives: without the client
// secret of its auth block, which only the host uses.
func (pl Plugin) PluginConfig() json.RawMessage {
	if pl.Upstream == nil {
		return pl.Config
	}
	var m map[string]any
	if json.Unmarshal(pl.Config, &m) != nil {
		return pl.Config
	}
	if auth, ok := m["auth"].([]any); ok {
		for _, a := range auth {
			blocks, _ := a.(map[string]any)
			for _, mode := range []string{string(tokenexchange.Exchange), string(tokenexchange.ClientCredentials), string(tokenexchange.UserConsent)} {
				list, _ := blocks[mode].([]any)
				for _, b := range list {
					if o, ok := b.(map[string]any); ok {
						delete(o, "client_secret")
					}
				}
			}
		}
	}
	out, err := json.Marshal(m)
	if err != nil {
		panic(fmt.Sprintf("deployment: re-encoding a config that decoded: %v", err))
	}
	return out
}
