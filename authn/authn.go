// Package authn turns an MCP HTTP client's credential into the principal
// its calls are made for. A request carries it as a bearer token
// (Authorization: Bearer …), checked on every request by the MCP SDK's
// bearer-token middleware with Verify:
//
//   - an API key (KeyPrefix…) is looked up by its SHA-256 in a keys file
//     (LoadKeys; `host key add` makes one with NewKey), which never holds
//     a key itself;
//   - any other token is an OAuth 2.1 access token: a JWT whose signature,
//     iss, aud, exp and nbf are checked against an issuer's published keys
//     (OAuthConfig), whose sub is the principal and whose scopes and
//     groups become its attributes.
//
// A request without a valid credential is answered 401 before it reaches
// the MCP server, so no call of it reaches the pipeline.
//
//	a, err := authn.New(ctx, authn.Config{Keys: keys})
//	http.Handle("/", a.Require(mux))
//	// in a tool handler: p, ok := authn.PrincipalOf(req.Extra.TokenInfo)
package authn

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/plugkit-go/plugkit/shared/identity"
)

// Config says which credentials are accepted; at least one of its fields
// is set.
type Config struct {
	// Keys are API keys (nil: none accepted).
	Keys *Keys
	// OAuth, when set, accepts the access tokens of one issuer.
	OAuth *OAuthConfig
}

// Authenticator checks credentials against the keys it holds now and its
// issuer's.
type Authenticator struct {
	keys  atomic.Pointer[Keys]
	oauth *oauth
	// OnRefused, when set before Require, is told of each request refused
	// for its credential (for metrics): "missing" or "invalid". It must
	// not block.
	OnRefused func(reason string)
}

// New returns an authenticator for cfg. With OAuth, it fetches the
// issuer's keys now and follows them until ctx ends.
func New(ctx context.Context, cfg Config) (*Authenticator, error) {
	a := &Authenticator{}
	a.keys.Store(cfg.Keys)
	if cfg.OAuth != nil {
		o, err := newOAuth(ctx, *cfg.OAuth)
		if err != nil {
			return nil, err
		}
		a.oauth = o
	}
	return a, nil
}

// SetKeys replaces the keys (a reload of the keys file); requests from
// then on are checked against them.
func (a *Authenticator) SetKeys(keys *Keys) { a.keys.Store(keys) }

// keyTTL is the expiry an API key's token info is given: the middleware
// wants one, and a key is checked again on every request anyway.
const keyTTL = time.Hour

// Verify is the MCP SDK's auth.TokenVerifier: the principal token names,
// or an error that unwraps to auth.ErrInvalidToken (401).
func (a *Authenticator) Verify(ctx context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
	if v, ok := ctx.Value(verifiedKey{}).(verified); ok && v.token == token {
		// Require checked this very token a moment ago: a JWT's signature
		// is worth checking once.
		return v.info, nil
	}
	if strings.HasPrefix(token, KeyPrefix) {
		keys := a.keys.Load()
		if keys == nil {
			return nil, fmt.Errorf("%w: API keys are not accepted here", auth.ErrInvalidToken)
		}
		p, ok := keys.Lookup(token)
		if !ok {
			return nil, fmt.Errorf("%w: unknown API key", auth.ErrInvalidToken)
		}
		return tokenInfo(p, time.Now().Add(keyTTL), nil), nil
	}
	if a.oauth != nil {
		return a.oauth.verify(ctx, token)
	}
	return nil, fmt.Errorf("%w: not an API key", auth.ErrInvalidToken)
}

// Require wraps h so that every request must carry a valid credential,
// and serves the protected resource metadata (RFC 9728) when tokens of an
// issuer are accepted. A request without a valid credential is answered
// 401 with a WWW-Authenticate challenge (RFC 6750; pointing at the
// metadata), which the SDK's middleware leaves out when it has no metadata
// to point at; one with a credential goes through the SDK's middleware,
// which checks the required scopes (403) and hands the token info to the
// MCP server.
func (a *Authenticator) Require(h http.Handler) http.Handler {
	opts := &auth.RequireBearerTokenOptions{}
	var metadata http.Handler
	if a.oauth != nil {
		opts.ResourceMetadataURL = metadataURL(a.oauth.cfg.Audience)
		opts.Scopes = a.oauth.cfg.Scopes
		metadata = a.oauth.metadataHandler()
	}
	sdk := auth.RequireBearerToken(a.Verify, opts)(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if metadata != nil && strings.HasPrefix(r.URL.Path, MetadataPath) {
			metadata.ServeHTTP(w, r)
			return
		}
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			a.refused("missing")
			challenge(w, opts.ResourceMetadataURL, "missing bearer token")
			return
		}
		token = strings.TrimSpace(token)
		info, err := a.Verify(r.Context(), token, r)
		if err != nil {
			a.refused("invalid")
			challenge(w, opts.ResourceMetadataURL, err.Error())
			return
		}
		sdk.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), verifiedKey{}, verified{token, info})))
	})
}

// verified is a token Require has checked, for the SDK's middleware to
// take as it is.
type verified struct {
	token string
	info  *auth.TokenInfo
}

type verifiedKey struct{}

func (a *Authenticator) refused(reason string) {
	if a.OnRefused != nil {
		a.OnRefused(reason)
	}
}

func challenge(w http.ResponseWriter, metadata, why string) {
	c := `Bearer realm="plugkit", error="invalid_token"`
	if metadata != "" {
		c += fmt.Sprintf(", resource_metadata=%q", metadata)
	}
	w.Header().Set("WWW-Authenticate", c)
	http.Error(w, why, http.StatusUnauthorized)
}

func tokenInfo(p identity.Principal, exp time.Time, scopes []string) *auth.TokenInfo {
	p = p.Bounded()
	return &auth.TokenInfo{
		Scopes:     scopes,
		Expiration: exp,
		// The SDK refuses a request of a session that another user's
		// credential opened.
		UserID: p.String(),
		Extra:  map[string]any{"plugkit/principal": p},
	}
}

// subjectTokenKey holds, in the token info of an OAuth access token, the
// token itself.
const subjectTokenKey = "plugkit/subject_token"

// subjectToken is a token that prints (%v, JSON) as nothing.
type subjectToken struct{ s string }

func (subjectToken) String() string   { return "[redacted]" }
func (subjectToken) GoString() string { return "[redacted]" }

// SubjectTokenOf is the OAuth access token Verify checked for a request,
// for the host to exchange for an upstream's token (never to pass on);
// "" for an API key or token info Verify did not make.
func SubjectTokenOf(ti *auth.TokenInfo) string {
	if ti == nil {
		return ""
	}
	t, _ := ti.Extra[subjectTokenKey].(subjectToken)
	return t.s
}

// PrincipalOf is the principal Verify found for a request; ok is false
// for token info it did not make (or none).
func PrincipalOf(ti *auth.TokenInfo) (p identity.Principal, ok bool) {
	if ti == nil {
		return identity.Principal{}, false
	}
	p, ok = ti.Extra["plugkit/principal"].(identity.Principal)
	return p, ok
}
