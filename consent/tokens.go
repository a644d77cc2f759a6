package consent

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/plugkit-go/plugkit/vault"
)

// matches reports whether the record of principal ("kind:id") is one that
// who names: "kind:id" exactly, or an id alone of any kind.
func matches(principal, who string) bool {
	if who == "" || principal == who {
		return true
	}
	if strings.Contains(who, ":") {
		return false
	}
	_, id, _ := strings.Cut(principal, ":")
	return id == who
}

// List is the records of the principals who names ("" for all), for plugin
// ("" for every plugin), without their tokens.
func (m *Manager) List(ctx context.Context, who, plugin string) ([]vault.Entry, error) {
	all, err := m.vault.List(ctx, "")
	if err != nil {
		return nil, err
	}
	out := []vault.Entry{}
	for _, e := range all {
		if matches(e.Principal, who) && (plugin == "" || e.Plugin == plugin) {
			out = append(out, e)
		}
	}
	return out, nil
}

// Revoked is a record Revoke dropped, and what the authorization server
// said to revoking its tokens there (RFC 7009).
type Revoked struct {
	vault.Entry
	// AtServer is "revoked", "no revocation endpoint", or why it failed.
	AtServer string
}

// Revoke drops the tokens of the principals who names for plugin ("" for
// every plugin): their next call asks for consent again. Each token is also
// revoked at its authorization server when that offers RFC 7009
// revocation (best effort: the host's copy is dropped either way).
func (m *Manager) Revoke(ctx context.Context, who, plugin string) ([]Revoked, error) {
	list, err := m.List(ctx, who, plugin)
	if err != nil {
		return nil, err
	}
	out := make([]Revoked, 0, len(list))
	for _, e := range list {
		t, ok, gerr := m.vault.Get(ctx, e.Principal, e.Plugin)
		if err := m.vault.Delete(ctx, e.Principal, e.Plugin); err != nil {
			return out, err
		}
		r := Revoked{Entry: e, AtServer: "no revocation endpoint"}
		switch {
		case gerr != nil:
			r.AtServer = "not revoked there: the record does not open"
		case ok && t.RevokeURL != "":
			r.AtServer = m.revokeAt(ctx, t)
		}
		out = append(out, r)
	}
	return out, nil
}

// revokeAt revokes t's refresh token (which ends its access tokens at most
// servers) and its access token at t.RevokeURL, as t's public client.
func (m *Manager) revokeAt(ctx context.Context, t vault.Token) string {
	ctx, cancel := context.WithTimeout(ctx, RequestTimeout)
	defer cancel()
	for _, tok := range []struct{ value, hint string }{{t.RefreshToken, "refresh_token"}, {t.AccessToken, "access_token"}} {
		if tok.value == "" {
			continue
		}
		form := url.Values{"token": {tok.value}, "token_type_hint": {tok.hint}, "client_id": {t.ClientID}}
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, t.RevokeURL, strings.NewReader(form.Encode()))
		if err != nil {
			return "not revoked there: " + err.Error()
		}
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := m.client.Do(req)
		if err != nil {
			return "not revoked there: " + scrub(err).Error()
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return "not revoked there: " + t.RevokeURL + " answered " + resp.Status
		}
	}
	return "revoked"
}
