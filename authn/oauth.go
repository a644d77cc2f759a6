package authn

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/MicahParks/keyfunc/v3"
	"github.com/golang-jwt/jwt/v5"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"

	"github.com/plugkit-go/plugkit/pipeline"
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
	keys, err := keyfunc.NewDefaultCtx(ctx, []string{cfg.JWKSURL})
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
	p := pipeline.Principal{ID: sub, Kind: o.cfg.Kind}
	for _, s := range scopes {
		p.Attributes = append(p.Attributes, "scope:"+s)
	}
	for _, g := range listClaim(claims[o.cfg.GroupsClaim]) {
		p.Attributes = append(p.Attributes, "group:"+g)
	}
	return tokenInfo(p, exp.Time, scopes), nil
}

func stringClaim(v any) string {
	s, _ := v.(string)
	return s
}

// listClaim reads a claim that is a list of strings or one string.
func listClaim(v any) []string {
	switch v := v.(type) {
	case string:
		return []string{v}
	case []any:
		var out []string
		for _, x := range v {
			if s, ok := x.(string); ok {
				out = append(out, s)
			}
		}
		return out
	}
	return nil
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
