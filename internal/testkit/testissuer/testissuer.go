// Package testissuer is an OAuth authorization server for tests, as far as
// a resource server sees one: a signing key, its JWKS served on loopback,
// and access tokens (JWTs) made to order; and a token endpoint (TokenURL)
// that implements RFC 8693 token exchange and client credentials for one
// client (ClientID, ClientSecret).
package testissuer

import (
	"crypto/rand"
	"crypto/rsa"
	"encoding/base64"
	"encoding/json"
	"math/big"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Issuer signs tokens with Key and publishes it at JWKSURL.
type Issuer struct {
	URL     string // the issuer's identifier (iss)
	JWKSURL string
	Key     *rsa.PrivateKey
	KID     string
	// TokenURL is the token endpoint (see token.go).
	TokenURL string
	// ClientID and ClientSecret are the one client the token endpoint
	// knows (HTTP Basic).
	ClientID, ClientSecret string

	grants grants
}

// Start serves the issuer's JWKS until the test ends.
func Start(t testing.TB) *Issuer {
	t.Helper()
	iss := &Issuer{Key: NewKey(t), KID: "test-key-1", ClientID: "plugkit-gateway", ClientSecret: "test-client-secret"}
	jwks, _ := json.Marshal(map[string]any{"keys": []map[string]string{{
		"kty": "RSA", "kid": iss.KID, "use": "sig", "alg": "RS256",
		"n": base64.RawURLEncoding.EncodeToString(iss.Key.N.Bytes()),
		"e": base64.RawURLEncoding.EncodeToString(big.NewInt(int64(iss.Key.E)).Bytes()),
	}}})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == tokenPath {
			iss.serveToken(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(jwks)
	}))
	t.Cleanup(srv.Close)
	iss.URL, iss.JWKSURL, iss.TokenURL = srv.URL, srv.URL+"/jwks.json", srv.URL+tokenPath
	return iss
}

// NewKey makes an RSA signing key.
func NewKey(t testing.TB) *rsa.PrivateKey {
	t.Helper()
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// Token is an access token: claims as given, plus iss and iat; exp one
// hour away unless claims say otherwise.
func (iss *Issuer) Token(t testing.TB, claims jwt.MapClaims) string {
	t.Helper()
	return iss.TokenSignedBy(t, iss.Key, claims)
}

// TokenSignedBy is Token signed with key under the issuer's key id: what a
// forger without the issuer's key would send.
func (iss *Issuer) TokenSignedBy(t testing.TB, key *rsa.PrivateKey, claims jwt.MapClaims) string {
	t.Helper()
	c := jwt.MapClaims{"iss": iss.URL, "iat": time.Now().Unix(), "exp": time.Now().Add(time.Hour).Unix()}
	for k, v := range claims {
		c[k] = v
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = iss.KID
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
