package tokenexchange

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Mode is how an upstream's token is obtained.
type Mode string

const (
	// Exchange is RFC 8693 token exchange of the caller's own token.
	Exchange Mode = "token_exchange"
	// ClientCredentials is the gateway's own identity (RFC 6749 §4.4).
	ClientCredentials Mode = "client_credentials"
	// UserConsent is each user's own consent, given once in a browser
	// (OAuth authorization code with PKCE), its tokens kept by the host.
	UserConsent Mode = "user_consent"
)

// Upstream is one plugin's auth block: where and how its calls' tokens are
// obtained.
type Upstream struct {
	// Plugin is the plugin serving the upstream (messages, metrics).
	Plugin string
	// URL is the upstream's own address, named in messages.
	URL  string
	Mode Mode
	// TokenURL is the token endpoint.
	TokenURL string
	// Audience and Scope are asked for (Scope space-separated).
	Audience string
	Scope    string
	// ClientID and ClientSecret authenticate the gateway at the token
	// endpoint (HTTP Basic); ClientID may be empty for token_exchange.
	ClientID     string
	ClientSecret string
}

// name is how messages name the upstream.
func (u *Upstream) name() string {
	if u.URL != "" {
		return u.URL
	}
	return "of plugin " + u.Plugin
}

// key identifies the token the upstream's settings ask for, whoever asks.
// It holds the plugin and a digest of the client secret: two plugins, or
// two secrets, never share a token, so a plugin configured with a wrong
// secret cannot be served one exchanged with the right one.
func (u *Upstream) key() string {
	secret := sha256.Sum256([]byte(u.ClientSecret))
	return strings.Join([]string{u.Plugin, string(u.Mode), u.TokenURL, u.Audience, u.Scope, u.ClientID, hex.EncodeToString(secret[:])}, "\x00")
}

// Error is a failure to obtain an upstream's token.
type Error struct {
	Upstream string
	Reason   string
}

func (e *Error) Error() string {
	return fmt.Sprintf("no token for upstream %s: %s", e.Upstream, e.Reason)
}

// String names the upstream and its mode, never its client secret.
func (u Upstream) String() string {
	return fmt.Sprintf("%s for %s at %s (audience %q)", u.Mode, u.name(), u.TokenURL, u.Audience)
}
