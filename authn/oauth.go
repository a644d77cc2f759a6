package authn

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/plugkit-go/plugkit/shared/identity"
)

// OAuthConfig is an OAuth 2.1 authorization server whose access tokens
// (JWTs) the host accepts, as a resource server of the MCP authorization
// spec.
type OAuthConfig struct {
	// Issuer is the tokens' iss, the authorization server's identifier.
	Issuer string
	// JWKSURL is where the issuer publishes its signing keys.
	JWKSURL string
	// Audience is this server's identifier: a token's aud must hold it.
	// It is also the resource named in the protected resource metadata.
	Audience string
	// Scopes are required of every token (403 without them).
	Scopes []string
	// GroupsClaim names the claim whose values become group:VALUE
	// attributes of the principal (default "groups").
	GroupsClaim string
	// Kind is the kind of a token's principal (default user).
	Kind string
}

// MaxJWKSBytes is the largest answer read from the issuer's keys URL: a
// key set is a few KiB, and a hostile or broken issuer must not make the
// host read without end. A larger answer fails that refresh (logged) and
// the keys in use stay.
const MaxJWKSBytes = 1 << 20

// cappedBodies fails reading a response body past max bytes.
type cappedBodies struct {
	base http.RoundTripper
	max  int64
}

func (c cappedBodies) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	if resp.ContentLength > c.max {
		resp.Body.Close()
		return nil, fmt.Errorf("%s answered %d bytes, more than the limit of %d", r.URL.Redacted(), resp.ContentLength, c.max)
	}
	resp.Body = &cappedBody{ReadCloser: resp.Body, left: c.max, max: c.max, url: r.URL.Redacted()}
	return resp, nil
}

type cappedBody struct {
	io.ReadCloser
	left int64
	max  int64
	url  string
}

func (b *cappedBody) Read(p []byte) (int, error) {
	if b.left <= 0 {
		// One byte past the limit tells a body at the limit from a larger one.
		var one [1]byte
		if n, _ := b.ReadCloser.Read(one[:]); n > 0 {
			return 0, fmt.Errorf("%s answered more than the limit of %d bytes", b.url, b.max)
		}
		return b.ReadCloser.Read(p)
	}
	if int64(len(p)) > b.left {
		p = p[:b.left]
	}
	n, err := b.ReadCloser.Read(p)
	b.left -= int64(n)
	return n, err
}

// MetadataPath is where the protected resource metadata (RFC 9728) is
// served, and what a 401's WWW-Authenticate points at.
const MetadataPath = "/.well-known/oauth-protected-resource"

// validMethods are the signature algorithms a token may use: asymmetric
// ones only, so that the keys the issuer publishes verify and cannot sign.
var validMethods = []string{"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}

// oauth checks JWTs against an issuer's published keys.
type oauth struct {
	cfg    OAuthConfig
	keys   keyfunc.Keyfunc
	parser *jwt.Parser
}

// newOAuth starts following the issuer's keys (fetched now, then every
// hour and whenever a token names a key not seen yet) until ctx ends.
func newOAuth(ctx context.Context, cfg OAuthConfig) (*oauth, error) {
	if cfg.GroupsClaim == "" {
		cfg.GroupsClaim = "groups"
	}
	if cfg.Kind == "" {
		cfg.Kind = identity.KindUser
	}
	keys, err := keyfunc.NewDefaultOverrideCtx(ctx, []string{cfg.JWKSURL}, keyfunc.Override{
		Client: &http.Client{Transport: cappedBodies{base: http.DefaultTransport, max: MaxJWKSBytes}},
	})
	if err != nil {
		return nil, fmt.Errorf("oauth: the issuer's keys at %s: %w", cfg.JWKSURL, err)
	}
	return &oauth{cfg: cfg, keys: keys, parser: jwt.NewParser(
		jwt.WithValidMethods(validMethods),
		jwt.WithIssuer(cfg.Issuer),
		jwt.WithAudience(cfg.Audience),
		jwt.WithExpirationRequired(),
		jwt.WithLeeway(30*time.Second),
	)}, nil
}

// verify checks a token's signature, iss, aud, exp and nbf, and returns
// the principal and scopes it grants.
func (o *oauth) verify(ctx context.Context, token string) (*auth.TokenInfo, error) {
	claims := jwt.MapClaims{}
	if _, err := o.parser.ParseWithClaims(token, claims, o.keys.KeyfuncCtx(ctx)); err != nil {
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	sub, _ := claims.GetSubject()
	if sub == "" {
		return nil, fmt.Errorf("%w: the token has no subject (sub)", auth.ErrInvalidToken)
	}
	exp, _ := claims.GetExpirationTime()
	scopes := strings.Fields(stringClaim(claims["scope"]))
	p := identity.Principal{ID: sub, Kind: o.cfg.Kind}
	for _, s := range scopes {
		p.Attributes = append(p.Attributes, "scope:"+s)
	}
	groups, err := groupsClaim(claims, o.cfg.GroupsClaim)
	if err != nil {
		// A deny rule may name a group: a claim that cannot be read is
		// not "no groups", which would slip past it.
		return nil, fmt.Errorf("%w: %v", auth.ErrInvalidToken, err)
	}
	for _, g := range groups {
		p.Attributes = append(p.Attributes, "group:"+g)
	}
	ti := tokenInfo(p, exp.Time, scopes)
	// Kept for the host alone to exchange for an upstream's token
	// (tokenexchange); it prints as nothing.
	ti.Extra[subjectTokenKey] = subjectToken{token}
	return ti, nil
}

func stringClaim(v any) string {
	s, _ := v.(string)
	return s
}

// groupsClaim reads the groups claim named name: absent is no groups; a
// string is one group, a list of strings the groups; anything else (an
// object, a number, null, a list holding a non-string or an empty string)
// is an error naming the claim, so that the token is refused.
func groupsClaim(claims jwt.MapClaims, name string) ([]string, error) {
	v, ok := claims[name]
	if !ok {
		return nil, nil
	}
	switch v := v.(type) {
	case string:
		if v == "" {
			return nil, fmt.Errorf("the %q claim is an empty string", name)
		}
		return []string{v}, nil
	case []any:
		out := make([]string, 0, len(v))
		for i, x := range v {
			s, ok := x.(string)
			if !ok || s == "" {
				return nil, fmt.Errorf("the %q claim's item %d is %s, not a group name", name, i, jsonKind(x))
			}
			out = append(out, s)
		}
		return out, nil
	}
	return nil, fmt.Errorf("the %q claim is %s, not a group name or a list of them", name, jsonKind(v))
}

// jsonKind names the JSON type of a decoded value, for a refusal.
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case string:
		if v == "" {
			return "an empty string"
		}
		return "a string"
	case bool:
		return "a boolean"
	case float64, json.Number:
		return "a number"
	case []any:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("a %T", v)
}

// metadataURL is the protected resource metadata's URL for the resource
// audience: its origin, MetadataPath, then its path (RFC 9728 §3.1).
func metadataURL(audience string) string {
	u, err := url.Parse(audience)
	if err != nil {
		return ""
	}
	return u.Scheme + "://" + u.Host + MetadataPath + strings.TrimSuffix(u.Path, "/")
}

// metadataHandler serves the protected resource metadata.
func (o *oauth) metadataHandler() http.Handler {
	return auth.ProtectedResourceMetadataHandler(&oauthex.ProtectedResourceMetadata{
		Resource:               o.cfg.Audience,
		AuthorizationServers:   []string{o.cfg.Issuer},
		ScopesSupported:        o.cfg.Scopes,
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "plugkit",
	})
}
