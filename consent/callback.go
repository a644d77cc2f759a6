package consent

import (
	"context"
	"encoding/json"
	"errors"
	"html/template"
	"net/http"

	"golang.org/x/oauth2"

	"github.com/plugkit-go/plugkit/vault"
)

// Handler serves the callback listener: the authorization server sends
// the browser back to CallbackPath; ClientPath is the host's client ID
// metadata document.
func (m *Manager) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+CallbackPath, m.callback)
	mux.HandleFunc("GET "+ClientPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(m.clientMetadata(m.base + ClientPath))
	})
	return mux
}

var done = template.Must(template.New("done").Parse(`<!doctype html>
<html><head><title>{{.Title}}</title></head><body><h1 id="title">{{.Title}}</h1><p id="detail">{{.Detail}}</p></body></html>`))

func page(w http.ResponseWriter, status int, title, detail string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(status)
	_ = done.Execute(w, map[string]string{"Title": title, "Detail": detail})
}

// callback checks the state (known, unexpired, used once), the issuer
// (RFC 9207, when sent), exchanges the code with the state's PKCE
// verifier, and keeps the token for the state's principal.
func (m *Manager) callback(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	m.mu.Lock()
	p, ok := m.pending[state]
	delete(m.pending, state)
	m.mu.Unlock()
	if !ok || state == "" || m.now().After(p.expires) {
		page(w, http.StatusBadRequest, "Authorization refused", "This authorization is unknown, expired or already used. Call the tool again for a new link.")
		return
	}
	if iss := q.Get("iss"); iss != "" && iss != p.srv.issuer {
		page(w, http.StatusBadRequest, "Authorization refused", "The answer came from another authorization server than the one asked.")
		return
	}
	if e := q.Get("error"); e != "" {
		page(w, http.StatusForbidden, "Authorization not given", "The authorization server answered "+e+". Call the tool again for a new link.")
		return
	}
	code := q.Get("code")
	if code == "" {
		page(w, http.StatusBadRequest, "Authorization refused", "The answer holds no code.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), RequestTimeout)
	defer cancel()
	tok, err := m.config(p.srv).Exchange(context.WithValue(ctx, oauth2.HTTPClient, m.client), code,
		oauth2.VerifierOption(p.verifier), oauth2.SetAuthURLParam("resource", p.srv.resource))
	if err != nil {
		detail := "The authorization server refused the code."
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			detail = "The authorization server refused the code: " + re.ErrorCode + "."
		}
		page(w, http.StatusBadGateway, "Authorization failed", detail+" Call the tool again for a new link.")
		return
	}
	scope, _ := tok.Extra("scope").(string)
	t := vault.Token{Upstream: p.u.URL, AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
		Scope: scope, TokenURL: p.srv.tokenURL, ClientID: p.srv.clientID, Resource: p.srv.resource, RevokeURL: p.srv.revokeURL, Issued: m.now()}
	if err := m.vault.Put(ctx, p.principal, p.u.Plugin, t); err != nil {
		page(w, http.StatusInternalServerError, "Authorization not kept", "The host could not keep the token: "+err.Error())
		return
	}
	page(w, http.StatusOK, "Access allowed", p.principal+" may now use "+p.u.URL+" through plugkit. Return to your agent and call the tool again.")
}
