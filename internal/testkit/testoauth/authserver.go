// Package testoauth is an OAuth 2.1 authorization server and a protected
// MCP server for tests of user consent (a bridged server's auth block
// user_consent): RFC 8414 metadata, a login and consent page, the
// authorization code grant with PKCE S256 only, refresh tokens, RFC 7009
// revocation, RFC 7591 dynamic registration and client ID metadata
// documents (fetched from their URL); and an upstream MCP server that
// answers 401 with RFC 9728 metadata and records whose token each call
// carried.
package testoauth

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Users are the accounts of the login page, name to password.
var Users = map[string]string{"alice": "alice-password", "bob": "bob-password"}

// AuthServer is the authorization server.
type AuthServer struct {
	URL string // issuer
	// TTL is the life of the access tokens it issues from now on.
	mu        sync.Mutex
	ttl       time.Duration
	clients   map[string]client
	codes     map[string]*grant
	access    map[string]*grant
	refresh   map[string]*grant
	log       []Event
	cimd      bool
	dcr       bool
	srvClient *http.Client
}

// Options say how clients may identify themselves.
type Options struct {
	// Clients are pre-registered client ids, each with its redirect URIs
	// (any when empty).
	Clients map[string][]string
	// CIMD advertises and accepts client ID metadata documents.
	CIMD bool
	// DCR offers RFC 7591 registration.
	DCR bool
}

type client struct{ redirects []string }

// grant is what a code or a token stands for.
type grant struct {
	user, client, redirect, challenge, scope, resource string
	expiry                                             time.Time
	used, revoked                                      bool
	// tokens are those issued from a code (revoked if it is replayed).
	tokens []string
}

// Event is one thing the server did, for a test's assertions.
type Event struct {
	Kind     string // "code", "token", "refresh", "refused", "revoke", "register", "cimd"
	User     string
	Client   string
	Token    string // the access token issued
	Resource string
	Scope    string
	Detail   string
}

// StartAuthServer serves until the test ends.
func StartAuthServer(t testing.TB, o Options) *AuthServer {
	t.Helper()
	a := &AuthServer{ttl: time.Hour, clients: map[string]client{}, codes: map[string]*grant{}, access: map[string]*grant{},
		refresh: map[string]*grant{}, cimd: o.CIMD, dcr: o.DCR}
	for id, r := range o.Clients {
		a.clients[id] = client{redirects: r}
	}
	tr := &http.Transport{}
	a.srvClient = &http.Client{Transport: tr, Timeout: 5 * time.Second}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", a.metadata)
	mux.HandleFunc("GET /authorize", a.authorize)
	mux.HandleFunc("POST /authorize", a.consent)
	mux.HandleFunc("POST /token", a.token)
	mux.HandleFunc("POST /revoke", a.revoke)
	mux.HandleFunc("POST /register", a.register)
	srv := httptest.NewServer(mux)
	t.Cleanup(func() { srv.Close(); tr.CloseIdleConnections() })
	a.URL = srv.URL
	return a
}

// SetTTL sets the life of the access tokens issued from now on.
func (a *AuthServer) SetTTL(d time.Duration) {
	a.mu.Lock()
	a.ttl = d
	a.mu.Unlock()
}

// Events is what the server did so far.
func (a *AuthServer) Events() []Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.log)
}

// Check is the user an access token stands for, if it is valid for
// resource.
func (a *AuthServer) Check(tok, resource string) (string, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	g, ok := a.access[tok]
	if !ok || g.revoked || time.Now().After(g.expiry) || g.resource != resource {
		return "", false
	}
	return g.user, true
}

func (a *AuthServer) event(e Event) { a.log = append(a.log, e) }

func random() string {
	b := make([]byte, 18)
	if _, err := rand.Read(b); err != nil {
		panic(err)
	}
	return hex.EncodeToString(b)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func oauthError(w http.ResponseWriter, status int, code, desc string) {
	writeJSON(w, status, map[string]string{"error": code, "error_description": desc})
}

func (a *AuthServer) metadata(w http.ResponseWriter, _ *http.Request) {
	m := map[string]any{
		"issuer": a.URL, "authorization_endpoint": a.URL + "/authorize", "token_endpoint": a.URL + "/token",
		"revocation_endpoint": a.URL + "/revoke", "response_types_supported": []string{"code"},
		"grant_types_supported":            []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported": []string{"S256"}, "scopes_supported": []string{"issues:read", "issues:write"},
		"token_endpoint_auth_methods_supported": []string{"none", "client_secret_basic", "client_secret_post"},
		"client_id_metadata_document_supported": a.cimd,
	}
	if a.dcr {
		m["registration_endpoint"] = a.URL + "/register"
	}
	writeJSON(w, http.StatusOK, m)
}

// clientOf is the client of id, fetching its metadata document when id is
// a URL and CIMD is on.
func (a *AuthServer) clientOf(id string) (client, error) {
	a.mu.Lock()
	c, ok := a.clients[id]
	cimd := a.cimd
	a.mu.Unlock()
	if ok {
		return c, nil
	}
	if !cimd || !strings.HasPrefix(id, "http") {
		return client{}, fmt.Errorf("unknown client %q", id)
	}
	resp, err := a.srvClient.Get(id)
	if err != nil {
		return client{}, fmt.Errorf("client metadata document %s: %v", id, err)
	}
	defer resp.Body.Close()
	var doc struct {
		ClientID     string   `json:"client_id"`
		RedirectURIs []string `json:"redirect_uris"`
	}
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&doc) != nil || doc.ClientID != id || len(doc.RedirectURIs) == 0 {
		return client{}, fmt.Errorf("client metadata document %s is not one for that client id", id)
	}
	a.mu.Lock()
	a.event(Event{Kind: "cimd", Client: id})
	a.mu.Unlock()
	return client{redirects: doc.RedirectURIs}, nil
}

var page = template.Must(template.New("consent").Parse(`<!doctype html>
<html><head><title>Sign in to the test tracker</title></head><body>
<h1>Sign in to the test tracker</h1>
<p>{{.Client}} asks to act for you on {{.Resource}} with the scopes <b>{{.Scope}}</b>.</p>
{{if .Error}}<p id="error">{{.Error}}</p>{{end}}
<form method="post" action="/authorize">
{{range $k, $v := .Query}}<input type="hidden" name="{{$k}}" value="{{index $v 0}}">{{end}}
<label>User <input id="user" name="user" autocomplete="off"></label>
<label>Password <input id="password" name="password" type="password"></label>
<button id="allow" name="decision" value="allow" type="submit">Allow</button>
<button id="deny" name="decision" value="deny" type="submit">Deny</button>
</form></body></html>`))

// checkRequest validates an authorization request, returning its client's
// redirect URI once it is known to be one of the client's.
func (a *AuthServer) checkRequest(q url.Values) (string, error) {
	c, err := a.clientOf(q.Get("client_id"))
	if err != nil {
		return "", err
	}
	redirect := q.Get("redirect_uri")
	if redirect == "" || (len(c.redirects) > 0 && !slices.Contains(c.redirects, redirect)) {
		return "", fmt.Errorf("redirect_uri %q is not one of the client's", redirect)
	}
	switch {
	case q.Get("response_type") != "code":
		return redirect, fmt.Errorf("response_type must be code")
	case q.Get("code_challenge") == "" || q.Get("code_challenge_method") != "S256":
		return redirect, fmt.Errorf("PKCE with S256 is required")
	case q.Get("state") == "":
		return redirect, fmt.Errorf("state is required")
	case q.Get("resource") == "":
		return redirect, fmt.Errorf("resource is required (RFC 8707)")
	}
	return redirect, nil
}

func (a *AuthServer) authorize(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if _, err := a.checkRequest(q); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	_ = page.Execute(w, map[string]any{"Client": q.Get("client_id"), "Resource": q.Get("resource"), "Scope": q.Get("scope"), "Query": q})
}

func (a *AuthServer) consent(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := url.Values{}
	for _, k := range []string{"client_id", "redirect_uri", "response_type", "code_challenge", "code_challenge_method", "state", "resource", "scope"} {
		if v := r.PostForm.Get(k); v != "" {
			q.Set(k, v)
		}
	}
	redirect, err := a.checkRequest(q)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	back := func(v url.Values) {
		v.Set("state", q.Get("state"))
		v.Set("iss", a.URL)
		http.Redirect(w, r, redirect+"?"+v.Encode(), http.StatusFound)
	}
	if r.PostForm.Get("decision") != "allow" {
		back(url.Values{"error": {"access_denied"}})
		return
	}
	user := r.PostForm.Get("user")
	if pw, ok := Users[user]; !ok || pw != r.PostForm.Get("password") {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusUnauthorized)
		_ = page.Execute(w, map[string]any{"Client": q.Get("client_id"), "Resource": q.Get("resource"), "Scope": q.Get("scope"), "Query": q, "Error": "Wrong user or password."})
		return
	}
	code := random()
	a.mu.Lock()
	a.codes[code] = &grant{user: user, client: q.Get("client_id"), redirect: redirect, challenge: q.Get("code_challenge"),
		scope: q.Get("scope"), resource: q.Get("resource"), expiry: time.Now().Add(time.Minute)}
	a.event(Event{Kind: "code", User: user, Client: q.Get("client_id"), Resource: q.Get("resource"), Scope: q.Get("scope")})
	a.mu.Unlock()
	back(url.Values{"code": {code}})
}

// issue makes an access and a refresh token for g; a.mu is held.
func (a *AuthServer) issue(w http.ResponseWriter, g *grant, kind string) {
	at, rt := "at-"+g.user+"-"+random(), "rt-"+g.user+"-"+random()
	ag := *g
	ag.used, ag.revoked, ag.tokens = false, false, nil
	ag.expiry = time.Now().Add(a.ttl)
	a.access[at] = &ag
	rg := ag
	rg.expiry = time.Now().Add(24 * time.Hour)
	a.refresh[rt] = &rg
	g.tokens = append(g.tokens, at, rt)
	a.event(Event{Kind: kind, User: g.user, Client: g.client, Token: at, Resource: g.resource, Scope: g.scope})
	writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "Bearer", "expires_in": int(a.ttl.Seconds()),
		"refresh_token": rt, "scope": g.scope})
}

func (a *AuthServer) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	f := r.PostForm
	clientID := f.Get("client_id")
	if id, _, ok := r.BasicAuth(); ok {
		clientID, _ = url.QueryUnescape(id)
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	refuse := func(code, desc string) {
		a.event(Event{Kind: "refused", Client: clientID, Detail: code + ": " + desc})
		oauthError(w, http.StatusBadRequest, code, desc)
	}
	switch f.Get("grant_type") {
	case "authorization_code":
		g, ok := a.codes[f.Get("code")]
		switch {
		case !ok:
			refuse("invalid_grant", "unknown code")
		case g.used:
			// A replayed code: refused, and what it gave is revoked
			// (RFC 6749 §4.1.2).
			for _, t := range g.tokens {
				if x, ok := a.access[t]; ok {
					x.revoked = true
				}
				if x, ok := a.refresh[t]; ok {
					x.revoked = true
				}
			}
			refuse("invalid_grant", "code already used")
		case time.Now().After(g.expiry):
			refuse("invalid_grant", "code expired")
		case g.client != clientID:
			refuse("invalid_grant", "code issued to another client")
		case g.redirect != f.Get("redirect_uri"):
			refuse("invalid_grant", "redirect_uri differs from the authorization request's")
		case s256(f.Get("code_verifier")) != g.challenge:
			g.used = true
			refuse("invalid_grant", "code_verifier does not match the code_challenge")
		case f.Get("resource") != "" && f.Get("resource") != g.resource:
			refuse("invalid_target", "resource differs from the authorization request's")
		default:
			g.used = true
			a.issue(w, g, "token")
		}
	case "refresh_token":
		g, ok := a.refresh[f.Get("refresh_token")]
		switch {
		case !ok || g.revoked || time.Now().After(g.expiry):
			refuse("invalid_grant", "unknown, revoked or expired refresh token")
		case g.client != clientID:
			refuse("invalid_grant", "refresh token issued to another client")
		default:
			// Rotated: the old refresh token is spent.
			g.revoked = true
			a.issue(w, g, "refresh")
		}
	default:
		refuse("unsupported_grant_type", f.Get("grant_type"))
	}
}

func s256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}

// revoke revokes an access or refresh token (RFC 7009); it is also how a
// test revokes one behind the gateway's back.
func (a *AuthServer) revoke(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		oauthError(w, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	a.Revoke(r.PostForm.Get("token"))
	w.WriteHeader(http.StatusOK)
}

// Revoke revokes tok, an access or a refresh token.
func (a *AuthServer) Revoke(tok string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range []map[string]*grant{a.access, a.refresh} {
		if g, ok := m[tok]; ok {
			g.revoked = true
			a.event(Event{Kind: "revoke", User: g.user, Client: g.client})
		}
	}
}

func (a *AuthServer) register(w http.ResponseWriter, r *http.Request) {
	var req struct {
		RedirectURIs []string `json:"redirect_uris"`
		ClientName   string   `json:"client_name"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 1<<16)).Decode(&req); err != nil || len(req.RedirectURIs) == 0 {
		oauthError(w, http.StatusBadRequest, "invalid_client_metadata", "redirect_uris required")
		return
	}
	id := "dyn-" + random()
	a.mu.Lock()
	a.clients[id] = client{redirects: req.RedirectURIs}
	a.event(Event{Kind: "register", Client: id, Detail: req.ClientName})
	a.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"client_id": id, "redirect_uris": req.RedirectURIs,
		"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"}})
}
