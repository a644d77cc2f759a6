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
	p, err := m.take(r.Context(), state)
	if err != nil {
		page(w, http.StatusInternalServerError, "Authorization not checked", "The host could not look up this authorization: "+err.Error())
		return
	}
	if p == nil || m.now().After(p.Expires) {
		page(w, http.StatusBadRequest, "Authorization refused", "This authorization is unknown, expired or already used. Call the tool again for a new link.")
		return
	}
	// From here the state is spent: the call waiting for it is told how
	// it ended (before the browser is, so that nothing sees the page
	// before the call may go on).
	id := consentID(state)
	end := func(status int, why, title, detail string) {
		m.ended(context.WithoutCancel(r.Context()), id, why)
		if m.OnEnded != nil {
			m.OnEnded(p.Principal, p.U.Plugin, p.Call, why)
		}
		page(w, status, title, detail)
	}
	srv := p.Srv.server()
	if iss := q.Get("iss"); iss != "" && iss != srv.issuer {
		end(http.StatusBadRequest, "the answer came from another authorization server", "Authorization refused", "The answer came from another authorization server than the one asked.")
		return
	}
	if e := q.Get("error"); e != "" {
		end(http.StatusForbidden, "the authorization server answered "+e, "Authorization not given", "The authorization server answered "+e+". Call the tool again for a new link.")
		return
	}
	code := q.Get("code")
	if code == "" {
		end(http.StatusBadRequest, "the answer held no code", "Authorization refused", "The answer holds no code.")
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), RequestTimeout)
	defer cancel()
	cfg := m.config(srv)
	if p.Redirect != "" {
		// The replica that made the URL may name itself otherwise.
		cfg.RedirectURL = p.Redirect
	}
	tok, err := cfg.Exchange(context.WithValue(ctx, oauth2.HTTPClient, m.client), code,
		oauth2.VerifierOption(p.Verifier), oauth2.SetAuthURLParam("resource", srv.resource))
	if err != nil {
		detail := "The authorization server refused the code."
		var re *oauth2.RetrieveError
		if errors.As(err, &re) && re.ErrorCode != "" {
			detail = "The authorization server refused the code: " + re.ErrorCode + "."
		}
		end(http.StatusBadGateway, "the authorization server refused the code", "Authorization failed", detail+" Call the tool again for a new link.")
		return
	}
	scope, _ := tok.Extra("scope").(string)
	t := vault.Token{Upstream: p.U.URL, AccessToken: tok.AccessToken, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
		Scope: scope, TokenURL: srv.tokenURL, ClientID: srv.clientID, Resource: srv.resource, RevokeURL: srv.revokeURL, Issued: m.now()}
	if err := m.vault.Put(ctx, p.Principal, p.U.Plugin, t); err != nil {
		end(http.StatusInternalServerError, "the host could not keep the token", "Authorization not kept", "The host could not keep the token: "+err.Error())
		return
	}
	end(http.StatusOK, "", "Access allowed", p.Principal+" may now use "+p.U.URL+" through plugkit. Return to your agent: a call waiting for this goes on by itself; otherwise call the tool again.")
}
