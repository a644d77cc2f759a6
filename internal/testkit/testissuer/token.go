package testissuer

import (
	"encoding/json"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

const tokenPath = "/token"

// IssuedTTL is the lifetime of the tokens the token endpoint issues.
const IssuedTTL = 10 * time.Minute

// Grant is one token the token endpoint issued.
type Grant struct {
	// Type is "token-exchange" or "client_credentials".
	Type string
	// Subject is the issued token's sub: the subject token's, or the
	// client's.
	Subject  string
	Audience string
	Scope    string
	// Token is the issued access token.
	Token string
}

type grants struct {
	mu   sync.Mutex
	list []Grant
}

// Grants lists the tokens the token endpoint issued so far, in order.
func (iss *Issuer) Grants() []Grant {
	iss.grants.mu.Lock()
	defer iss.grants.mu.Unlock()
	return append([]Grant(nil), iss.grants.list...)
}

// serveToken is the token endpoint: RFC 8693 token exchange of an access
// token of this issuer (signature and expiry checked, without leeway) for
// one of the requested audience and scope, whose act claim names the
// client; and client credentials. The client authenticates with HTTP
// Basic.
func (iss *Issuer) serveToken(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		http.Error(w, "POST only", http.StatusMethodNotAllowed)
		return
	}
	id, secret, ok := r.BasicAuth()
	if !ok || id != iss.ClientID || secret != iss.ClientSecret {
		oauthError(w, http.StatusUnauthorized, "invalid_client", "unknown client or wrong secret")
		return
	}
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	audience, scope := r.PostForm.Get("audience"), r.PostForm.Get("scope")
	var g Grant
	switch r.PostForm.Get("grant_type") {
	case "urn:ietf:params:oauth:grant-type:token-exchange":
		if tt := r.PostForm.Get("subject_token_type"); tt != "urn:ietf:params:oauth:token-type:access_token" {
			oauthError(w, http.StatusBadRequest, "invalid_request", "subject_token_type must be an access token, not "+tt)
			return
		}
		claims := jwt.MapClaims{}
		_, err := jwt.NewParser(jwt.WithValidMethods([]string{"RS256"}), jwt.WithIssuer(iss.URL), jwt.WithExpirationRequired()).
			ParseWithClaims(r.PostForm.Get("subject_token"), claims, func(*jwt.Token) (any, error) { return &iss.Key.PublicKey, nil })
		if err != nil {
			oauthError(w, http.StatusBadRequest, "invalid_grant", "subject_token: "+err.Error())
			return
		}
		sub, _ := claims.GetSubject()
		g = Grant{Type: "token-exchange", Subject: sub}
	case "client_credentials":
		g = Grant{Type: "client_credentials", Subject: id}
	default:
		oauthError(w, http.StatusBadRequest, "unsupported_grant_type", r.PostForm.Get("grant_type"))
		return
	}
	if audience == "" {
		oauthError(w, http.StatusBadRequest, "invalid_target", "an audience is required")
		return
	}
	g.Audience, g.Scope = audience, scope
	now := time.Now()
	c := jwt.MapClaims{"iss": iss.URL, "sub": g.Subject, "aud": audience, "iat": now.Unix(), "exp": now.Add(IssuedTTL).Unix()}
	if scope != "" {
		c["scope"] = strings.Join(strings.Fields(scope), " ")
	}
	if g.Type == "token-exchange" {
		c["act"] = map[string]string{"sub": id}
	}
	tok := jwt.NewWithClaims(jwt.SigningMethodRS256, c)
	tok.Header["kid"] = iss.KID
	s, err := tok.SignedString(iss.Key)
	if err != nil {
		oauthError(w, http.StatusInternalServerError, "server_error", err.Error())
		return
	}
	g.Token = s
	iss.grants.mu.Lock()
	iss.grants.list = append(iss.grants.list, g)
	iss.grants.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	_ = json.NewEncoder(w).Encode(map[string]any{
		"access_token":      s,
		"issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
		"token_type":        "Bearer",
		"expires_in":        int(IssuedTTL / time.Second),
	})
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"error": code, "error_description": desc})
}
