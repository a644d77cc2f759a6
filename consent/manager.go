package consent

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sync/singleflight"

	"github.com/plugkit-go/plugkit/tokenexchange"
	"github.com/plugkit-go/plugkit/vault"
)

// Paths served by Handler.
const (
	CallbackPath = "/oauth/callback"
	ClientPath   = "/oauth/client-metadata.json"
)

// Defaults.
const (
	// RequestTimeout bounds one request to an upstream or its
	// authorization server.
	RequestTimeout = 10 * time.Second
	// PendingLife is how long an authorization URL stays good.
	PendingLife = 10 * time.Minute
	// WaitLimit bounds how long a call asked with a URL-mode elicitation
	// waits for its principal's consent.
	WaitLimit = 5 * time.Minute
	// maxPending bounds the consents waiting for their browser.
	maxPending = 10000
	// maxPendingEach bounds those of one principal and plugin: past it
	// the oldest URL is dropped.
	maxPendingEach = 8
	// maxMargin is the most a token is refreshed before its expiry.
	maxMargin = 30 * time.Second
)

// Needed is the error of a call whose principal has not consented yet: the
// call is denied, and its message says where to consent.
type Needed struct {
	Principal string
	Upstream  string
	// URL is the authorization URL to open in a browser.
	URL string
	// ID names this authorization (not its state): a call asked with a
	// URL-mode elicitation waits for it (Manager.Await).
	ID string
}

// ConsentID is the authorization's id, for Await.
func (e *Needed) ConsentID() string { return e.ID }

// ConsentURL is the URL the principal must open (for the token broker's
// metrics, which cannot import this package).
func (e *Needed) ConsentURL() string { return e.URL }

func (e *Needed) Error() string {
	return fmt.Sprintf("%s has not authorized upstream %s yet: open %s in a browser, sign in there and allow access, then call again", e.Principal, e.Upstream, e.URL)
}

// Manager runs the flows and keeps the tokens. Make one with New.
type Manager struct {
	vault  *vault.Vault
	base   string // the callback listener's URL, no trailing slash
	client *http.Client
	now    func() time.Time

	// wait bounds how long a call waits for its consent (Await).
	wait time.Duration
	// OnEnded, when set before use, is told how each authorization that
	// came back ended: its principal, plugin, the call that asked, and ""
	// when a token was kept or else why not. Never a token. It must not
	// block.
	OnEnded func(principal, plugin, call, why string)

	mu      sync.Mutex
	pending map[string]*pending // by state, when the vault is not shared
	waiters map[string]*waiter  // by consent id
	servers map[string]*server  // by plugin and upstream URL
	group   singleflight.Group
}

// New is a manager keeping tokens in v, whose callback listener browsers
// reach at base; client (nil: one of its own) reaches upstreams and their
// authorization servers.
func New(v *vault.Vault, base string, client *http.Client) *Manager {
	if client == nil {
		client = &http.Client{Timeout: RequestTimeout}
	}
	return &Manager{vault: v, base: strings.TrimSuffix(base, "/"), client: client, now: time.Now,
		wait:    WaitLimit,
		pending: map[string]*pending{}, waiters: map[string]*waiter{}, servers: map[string]*server{}}
}

// SetWait bounds how long a call waits for its consent (Await); zero
// keeps WaitLimit. Call it before use.
func (m *Manager) SetWait(d time.Duration) {
	if d > 0 {
		m.wait = d
	}
}

// Vault is where the tokens are kept.
func (m *Manager) Vault() *vault.Vault { return m.vault }

// Token is principal's token for u: from the vault, refreshed when it is
// about to expire; without one, a *Needed error. Other errors say what
// failed and hold no token.
func (m *Manager) Token(ctx context.Context, u *tokenexchange.Upstream, principal string) (string, error) {
	t, ok, err := m.vault.Get(ctx, principal, u.Plugin)
	if err != nil {
		return "", err
	}
	if ok && t.Upstream == u.URL {
		if !m.stale(t) {
			return t.AccessToken, nil
		}
		if t.RefreshToken != "" {
			tok, err := m.refresh(ctx, u, principal)
			if err == nil {
				return tok, nil
			}
			var re *oauth2.RetrieveError
			if !errors.As(err, &re) || re.ErrorCode != "invalid_grant" {
				return "", err
			}
			// Another replica may have refreshed first with the same
			// (rotated, now spent) refresh token: its token is good.
			if now, ok, gerr := m.vault.Get(ctx, principal, u.Plugin); gerr == nil && ok && now.AccessToken != t.AccessToken && !m.stale(now) {
				return now.AccessToken, nil
			}
			// The refresh token is dead (revoked, expired): consent again.
		}
		if err := m.vault.Delete(ctx, principal, u.Plugin); err != nil {
			return "", err
		}
	}
	return "", m.ask(ctx, u, principal)
}

// stale reports whether t is to be refreshed: shortly before it expires, a
// tenth of its life before, at most maxMargin.
func (m *Manager) stale(t vault.Token) bool {
	if t.Expiry.IsZero() {
		return false
	}
	margin := min(t.Expiry.Sub(t.Issued)/10, maxMargin)
	return !m.now().Before(t.Expiry.Add(-margin))
}

// refresh renews principal's token for u with its refresh token, once for
// concurrent calls.
func (m *Manager) refresh(ctx context.Context, u *tokenexchange.Upstream, principal string) (string, error) {
	v, err, _ := m.group.Do("refresh\x00"+principal+"\x00"+u.Plugin, func() (any, error) {
		// Outlives a caller that gives up: others may wait on it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RequestTimeout)
		defer cancel()
		t, ok, err := m.vault.Get(rctx, principal, u.Plugin)
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant", ErrorDescription: "the token was revoked"}
		}
		if !m.stale(t) {
			return t.AccessToken, nil // another replica or call refreshed it
		}
		cfg := oauth2.Config{ClientID: t.ClientID, Endpoint: oauth2.Endpoint{TokenURL: t.TokenURL}}
		if t.ClientID == u.ClientID {
			cfg.ClientSecret = u.ClientSecret
		}
		nt, err := cfg.TokenSource(context.WithValue(rctx, oauth2.HTTPClient, m.client), &oauth2.Token{RefreshToken: t.RefreshToken, Expiry: time.Unix(1, 0)}).Token()
		if err != nil {
			var re *oauth2.RetrieveError
			if errors.As(err, &re) {
				return nil, re
			}
			return nil, fmt.Errorf("refresh of %s's token for upstream %s at %s: %w", principal, u.URL, t.TokenURL, scrub(err))
		}
		t.AccessToken, t.Issued, t.Expiry = nt.AccessToken, m.now(), nt.Expiry
		if nt.RefreshToken != "" {
			t.RefreshToken = nt.RefreshToken
		}
		if err := m.vault.Put(rctx, principal, u.Plugin, t); err != nil {
			return nil, err
		}
		return t.AccessToken, nil
	})
	if err != nil {
		var re *oauth2.RetrieveError
		if errors.As(err, &re) {
			// Never re's Body, which could echo a token.
			return "", &oauth2.RetrieveError{ErrorCode: re.ErrorCode, ErrorDescription: re.ErrorDescription, Response: re.Response}
		}
		return "", err
	}
	return v.(string), nil
}

// Drop forgets principal's token for plugin: the upstream refused it.
func (m *Manager) Drop(ctx context.Context, principal, plugin string) error {
	return m.vault.Delete(ctx, principal, plugin)
}

func (m *Manager) config(srv *server) *oauth2.Config {
	return &oauth2.Config{ClientID: srv.clientID, ClientSecret: srv.clientSecret, RedirectURL: m.base + CallbackPath,
		Endpoint: oauth2.Endpoint{AuthURL: srv.authURL, TokenURL: srv.tokenURL}}
}

// server is u's authorization server and the host's client there,
// discovered once.
func (m *Manager) server(ctx context.Context, u *tokenexchange.Upstream) (*server, error) {
	key := u.Plugin + "\x00" + u.URL + "\x00" + u.ClientID
	m.mu.Lock()
	srv, ok := m.servers[key]
	m.mu.Unlock()
	if ok {
		return srv, nil
	}
	v, err, _ := m.group.Do("discover\x00"+key, func() (any, error) {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RequestTimeout)
		defer cancel()
		srv, err := m.discover(rctx, u.URL)
		if err != nil {
			return nil, err
		}
		switch {
		case u.ClientID != "":
			srv.clientID, srv.clientSecret = u.ClientID, u.ClientSecret
		case srv.cimd:
			srv.clientID = m.base + ClientPath
		case srv.registerURL != "":
			if srv.clientID, err = m.register(rctx, srv); err != nil {
				return nil, err
			}
		default:
			return nil, fmt.Errorf("authorization server %s of upstream %s takes neither client id metadata documents nor dynamic registration: set client_id in the plugin's user_consent block", srv.issuer, u.URL)
		}
		m.mu.Lock()
		m.servers[key] = srv
		m.mu.Unlock()
		return srv, nil
	})
	if err != nil {
		return nil, fmt.Errorf("consent for upstream %s: %w", u.URL, err)
	}
	return v.(*server), nil
}

func randomString() string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("consent: no randomness: %v", err))
	}
	return base64.RawURLEncoding.EncodeToString(b)
}
