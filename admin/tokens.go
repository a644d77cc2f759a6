package admin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"github.com/plugkit-go/plugkit/consent"
	"github.com/plugkit-go/plugkit/vault"
)

// TokenEntry is one principal's consent to one bridged upstream: never the
// token itself.
type TokenEntry struct {
	Principal   string    `json:"principal"`
	Plugin      string    `json:"plugin"`
	Upstream    string    `json:"upstream"`
	Scope       string    `json:"scope,omitempty"`
	Expiry      time.Time `json:"expiry,omitzero"`
	Refreshable bool      `json:"refreshable"`
	Issued      time.Time `json:"issued,omitzero"`
	// AtServer, for a revoked token, is what its authorization server
	// said: "revoked", "no revocation endpoint", or why it failed.
	AtServer string `json:"at_server,omitempty"`
}

// TokensRequest selects records: a principal ("kind:id", or an id of any
// kind; "" for all) and a plugin ("" for all).
type TokensRequest struct {
	Principal string `json:"principal"`
	Plugin    string `json:"plugin,omitempty"`
}

// TokensAnswer is the records listed, or revoked.
type TokensAnswer struct {
	Tokens []TokenEntry `json:"tokens"`
}

var errNoConsent = errors.New("the deployment has no user_consent block: no user's upstream token is kept")

func (s *Server) consent() (*consent.Manager, error) {
	if s.c.Host == nil || s.c.Host.Consent() == nil {
		return nil, errNoConsent
	}
	return s.c.Host.Consent(), nil
}

func (s *Server) tokens(w http.ResponseWriter, r *http.Request) {
	s.tokensDo(w, r, "tokens", func(ctx context.Context, m *consent.Manager, req TokensRequest) (TokensAnswer, error) {
		list, err := m.List(ctx, req.Principal, req.Plugin)
		return answerOf(list, err)
	})
}

func (s *Server) revokeTokens(w http.ResponseWriter, r *http.Request) {
	s.tokensDo(w, r, "tokens revoke", func(ctx context.Context, m *consent.Manager, req TokensRequest) (TokensAnswer, error) {
		if req.Principal == "" {
			return TokensAnswer{}, errors.New("name the principal whose tokens to revoke")
		}
		list, err := m.Revoke(ctx, req.Principal, req.Plugin)
		entries := make([]vault.Entry, len(list))
		for i, e := range list {
			entries[i] = e.Entry
			s.log.Info("upstream token revoked", "principal", e.Principal, "plugin", e.Plugin, "at_server", e.AtServer)
		}
		ans, err := answerOf(entries, err)
		for i := range ans.Tokens {
			ans.Tokens[i].AtServer = list[i].AtServer
		}
		return ans, err
	})
}

func (s *Server) tokensDo(w http.ResponseWriter, r *http.Request, what string, f func(context.Context, *consent.Manager, TokensRequest) (TokensAnswer, error)) {
	var req TokensRequest
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		writeJSON(w, http.StatusBadRequest, Message{Error: what + ": bad request: " + err.Error()})
		return
	}
	m, err := s.consent()
	if err != nil {
		writeJSON(w, http.StatusConflict, Message{Error: what + ": " + err.Error()})
		return
	}
	ans, err := f(r.Context(), m, req)
	if err != nil {
		writeJSON(w, http.StatusInternalServerError, Message{Error: what + ": " + err.Error()})
		return
	}
	writeJSON(w, http.StatusOK, ans)
}

func answerOf(list []vault.Entry, err error) (TokensAnswer, error) {
	ans := TokensAnswer{Tokens: []TokenEntry{}}
	for _, e := range list {
		ans.Tokens = append(ans.Tokens, TokenEntry{Principal: e.Principal, Plugin: e.Plugin, Upstream: e.Upstream, Scope: e.Scope,
			Expiry: e.Expiry, Refreshable: e.Refresh, Issued: e.Issued})
	}
	return ans, err
}

// Tokens lists the kept upstream tokens of req's principals.
func (c *Client) Tokens(ctx context.Context, req TokensRequest) ([]TokenEntry, error) {
	return c.tokens(ctx, "/v1/tokens", req)
}

// RevokeTokens drops the upstream tokens of req's principals, returning
// those it dropped.
func (c *Client) RevokeTokens(ctx context.Context, req TokensRequest) ([]TokenEntry, error) {
	return c.tokens(ctx, "/v1/tokens/revoke", req)
}

func (c *Client) tokens(ctx context.Context, path string, req TokensRequest) ([]TokenEntry, error) {
	resp, err := c.do(ctx, http.MethodPost, path, req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var ans TokensAnswer
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		return nil, err
	}
	return ans.Tokens, nil
}
