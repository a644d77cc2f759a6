package deployment

// The host block's MCP front end: the address it listens on, its TLS
// material and how its clients authenticate.

import (
	"crypto/tls"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"strconv"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/hclbound"
	"github.com/plugkit-go/plugkit/internal/httplimit"
)

// checkLoopback accepts host:port where host is "localhost" or a loopback
// IP and port is 1..65535; the error completes "mcp "x" …". what names
// the unauthenticated service served there.
func checkLoopback(addr, what string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return errors.New("is not a host:port address such as \"127.0.0.1:8765\"")
	}
	if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
		return fmt.Errorf("has port %q; want a number from 1 to 65535", port)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		if what == "MCP" {
			return fmt.Errorf("%w: MCP may be reachable from other machines only over TLS and with authentication (mcp_tls and mcp_auth blocks)", errNotLoopback)
		}
		return fmt.Errorf("%w: %s has no authentication, so it must not be reachable from other machines", errNotLoopback, what)
	}
	return nil
}

var errNotLoopback = errors.New("is not on a loopback address (127.0.0.1, ::1 or localhost)")

// mcpTLS checks the mcp_tls block: both files, readable as a key pair.
func (p *parser) mcpTLS(ts *mcpTLSSyntax) *TLSFiles {
	if ts == nil {
		return nil
	}
	p.names(ts.Body, ts, "the mcp_tls block")
	if ts.Cert == nil || ts.Key == nil {
		p.errorf(ts.DefRange, "Incomplete mcp_tls block", "mcp_tls needs cert and key, PEM files of the server's certificate (chain) and its private key.")
		return nil
	}
	t := &TLSFiles{}
	t.Cert, _ = p.resolve(*ts.Cert)
	t.Key, _ = p.resolve(*ts.Key)
	if _, err := LoadKeyPair(t.Cert, t.Key); err != nil {
		p.errorf(valueRange(ts.Body, "cert", ts.DefRange), "Invalid mcp_tls files", "cert %q and key %q: %v.", *ts.Cert, *ts.Key, err)
		return nil
	}
	return t
}

// MaxTLSFileBytes is the largest certificate or key file read: a chain of
// a few certificates is a few KiB.
const MaxTLSFileBytes = 1 << 20

// LoadKeyPair reads a PEM certificate (chain) and its private key, each at
// most MaxTLSFileBytes, as tls.LoadX509KeyPair does: at start, by `host
// validate` and on every refresh (SIGHUP, `host reload`).
func LoadKeyPair(certFile, keyFile string) (tls.Certificate, error) {
	cert, err := hclbound.ReadAtMost(certFile, MaxTLSFileBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := hclbound.ReadAtMost(keyFile, MaxTLSFileBytes)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.X509KeyPair(cert, key)
}

// mcpAuth checks the mcp_auth block: a keys file that reads, an oauth
// block, or both.
func (p *parser) mcpAuth(as *mcpAuthSyntax) *MCPAuth {
	if as == nil {
		return nil
	}
	p.names(as.Body, as, "the mcp_auth block")
	if as.Keys == nil && as.OAuth == nil {
		p.errorf(as.DefRange, "Incomplete mcp_auth block", "mcp_auth needs keys, a file of API keys (make one with `host key add NAME`), an oauth block, or both.")
		return nil
	}
	a := &MCPAuth{OAuth: p.oauth(as.OAuth)}
	if as.Keys != nil {
		var shown string
		a.Keys, shown = p.resolve(*as.Keys)
		if _, err := os.Stat(a.Keys); errors.Is(err, fs.ErrNotExist) {
			p.errorf(valueRange(as.Body, "keys", as.DefRange), "Missing keys file", "keys file %s does not exist: make it with `host key add NAME`.", shown)
		} else if _, diags := authn.LoadKeys(a.Keys); diags.HasErrors() {
			p.diags = append(p.diags, diags...)
		}
	}
	// Kept with its errors too: `host key add` needs to know the file.
	return a
}

// oauth checks an mcp_auth oauth block: the issuer, its keys' URL and this
// server's audience, URLs over https (or http on loopback, for a local
// issuer).
func (p *parser) oauth(o *oauthSyntax) *authn.OAuthConfig {
	if o == nil {
		return nil
	}
	p.names(o.Body, o, "the oauth block")
	c := &authn.OAuthConfig{Scopes: o.Scopes}
	for _, f := range []struct {
		name string
		v    *string
		to   *string
	}{{"issuer", o.Issuer, &c.Issuer}, {"jwks_url", o.JWKSURL, &c.JWKSURL}, {"audience", o.Audience, &c.Audience}} {
		if f.v == nil {
			p.errorf(o.DefRange, "Incomplete oauth block", "oauth needs %s.", f.name)
			continue
		}
		if err := checkHTTPS(*f.v); err != nil {
			p.errorf(valueRange(o.Body, f.name, o.DefRange), "Invalid "+f.name, "%s %q %v.", f.name, *f.v, err)
			continue
		}
		*f.to = *f.v
	}
	if o.GroupsClaim != nil {
		c.GroupsClaim = *o.GroupsClaim
	}
	if o.Kind != nil {
		if k := *o.Kind; k != "user" && k != "agent" && k != "service" {
			p.errorf(valueRange(o.Body, "kind", o.DefRange), "Invalid kind", "kind %q is not user, agent or service.", k)
		} else {
			c.Kind = k
		}
	}
	return c
}

// checkHTTPS accepts an https URL, or an http one on a loopback host.
func checkHTTPS(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || u.Host == "" {
		return errors.New("is not an absolute URL")
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if ip := net.ParseIP(u.Hostname()); u.Hostname() == "localhost" || (ip != nil && ip.IsLoopback()) {
			return nil
		}
	}
	return errors.New("is not an https URL (http is accepted on loopback only)")
}

// mcp checks the host block's MCP front end: its address (loopback, unless
// served over TLS with credentials), TLS, credentials, sessions, origins,
// the state key and tool search.
func (p *parser) mcp(hs *hostSyntax, h *Host) {
	body, def := hs.Body, hs.DefRange
	h.MCPTLS = p.mcpTLS(hs.MCPTLS)
	h.MCPAuth = p.mcpAuth(hs.MCPAuth)
	if hs.MCP != nil {
		err := checkLoopback(*hs.MCP, "MCP")
		if errors.Is(err, errNotLoopback) && hs.MCPTLS != nil && hs.MCPAuth != nil {
			// Reachable from other machines, but only over TLS and with
			// a credential.
			err = nil
		}
		if err != nil {
			p.errorf(valueRange(body, "mcp", def), "Invalid mcp address", "mcp %q %v.", *hs.MCP, err)
		} else {
			h.MCP = *hs.MCP
		}
	}
	h.MCPMaxSessions = p.count(body, "mcp_max_sessions", hs.MCPMaxSessions, 1, h.MCPMaxSessions)
	h.MCPMaxConnsPerPeer = p.count(body, "mcp_max_conns_per_peer", hs.MCPMaxPeerConns, 1, h.MCPMaxConnsPerPeer)
	h.MCPIdleTimeout = p.duration(body, "mcp_idle_timeout", hs.MCPIdleTimeout, h.MCPIdleTimeout)
	h.MCPStateKey = p.mcpStateKey(hs)
	p.toolSearch(hs, h)
	for _, o := range hs.MCPOrigins {
		norm, ok := httplimit.NormalizeOrigin(o)
		if !ok {
			p.errorf(valueRange(body, "mcp_allowed_origins", def), "Invalid origin",
				"mcp_allowed_origins: %q is not an origin: write scheme://host[:port], http or https, with no path.", o)
			continue
		}
		h.MCPAllowedOrigins = append(h.MCPAllowedOrigins, norm)
	}
}
