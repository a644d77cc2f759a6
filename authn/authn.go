// Package authn turns an MCP HTTP client's credential into the principal
// its calls are made for. A request carries it as a bearer token
// (Authorization: Bearer …), checked on every request by the MCP SDK's
// bearer-token middleware with Verify:
//
//   - an API key (KeyPrefix…) is looked up by its SHA-256 in a keys file
//     (LoadKeys; `host key add` makes one with NewKey), which never holds
//     a key itself.
//
// A request without a valid credential is answered 401 before it reaches
// the MCP server, so no call of it reaches the pipeline.
//
//	a := authn.New(keys)
//	http.Handle("/mcp", a.Require(mcpHandler))
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

	"github.com/plugkit-go/plugkit/pipeline"
)

// Authenticator checks credentials against the keys it holds now.
type Authenticator struct {
	keys atomic.Pointer[Keys]
}

// New returns an authenticator of keys.
func New(keys *Keys) *Authenticator {
	a := &Authenticator{}
	a.keys.Store(keys)
	return a
}

// SetKeys replaces the keys (a reload of the keys file); requests from
// then on are checked against them.
func (a *Authenticator) SetKeys(keys *Keys) { a.keys.Store(keys) }

// keyTTL is the expiry an API key's token info is given: the middleware
// wants one, and a key is checked again on every request anyway.
const keyTTL = time.Hour

// Verify is the MCP SDK's auth.TokenVerifier: the principal token names,
// or an error that unwraps to auth.ErrInvalidToken (401).
func (a *Authenticator) Verify(_ context.Context, token string, _ *http.Request) (*auth.TokenInfo, error) {
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
	return nil, fmt.Errorf("%w: not an API key", auth.ErrInvalidToken)
}

// Require wraps h so that every request must carry a valid credential.
// A request without one is answered 401 with a WWW-Authenticate challenge
// (RFC 6750), which the SDK's middleware leaves out when it has no
// resource metadata to point at; one with a credential goes through the
// SDK's middleware, which hands its token info to the MCP server.
func (a *Authenticator) Require(h http.Handler) http.Handler {
	sdk := auth.RequireBearerToken(a.Verify, &auth.RequireBearerTokenOptions{})(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") {
			challenge(w, "missing bearer token")
			return
		}
		if _, err := a.Verify(r.Context(), strings.TrimSpace(token), r); err != nil {
			challenge(w, err.Error())
			return
		}
		sdk.ServeHTTP(w, r)
	})
}

func challenge(w http.ResponseWriter, why string) {
	w.Header().Set("WWW-Authenticate", `Bearer realm="plugkit", error="invalid_token"`)
	http.Error(w, why, http.StatusUnauthorized)
}

func tokenInfo(p pipeline.Principal, exp time.Time, scopes []string) *auth.TokenInfo {
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

// PrincipalOf is the principal Verify found for a request; ok is false
// for token info it did not make (or none).
func PrincipalOf(ti *auth.TokenInfo) (p pipeline.Principal, ok bool) {
	if ti == nil {
		return pipeline.Principal{}, false
	}
	p, ok = ti.Extra["plugkit/principal"].(pipeline.Principal)
	return p, ok
}
