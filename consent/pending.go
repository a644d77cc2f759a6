package consent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	"golang.org/x/oauth2"

	"github.com/plugkit-go/plugkit/tokenexchange"
)

// Each call of a principal without a token gets an authorization of its
// own: a fresh state and PKCE verifier, bound to the principal, the plugin
// and upstream, and the call (its execution id) that asked. The state is
// good once, for PendingLife; the call may wait for it (Await).
//
// With a shared vault (Redis) the pending authorization is kept there,
// sealed as the tokens are, so that the browser's callback may land on
// any replica; how it ended is left there too, for a call waiting on
// another replica. Without one it is kept in memory.

// pending is an authorization URL handed out and not yet come back. It is
// what a replica needs to finish the flow: sealed when shared (it holds the
// PKCE verifier and the plugin's client secret).
type pending struct {
	Principal string                 `json:"principal"`
	U         tokenexchange.Upstream `json:"upstream"`
	Srv       serverRecord           `json:"server"`
	Verifier  string                 `json:"verifier"`
	URL       string                 `json:"url"`
	// Redirect is the redirect URI the URL names.
	Redirect string `json:"redirect"`
	// Call is the execution id of the call that asked ("" for none).
	Call    string    `json:"call,omitempty"`
	Expires time.Time `json:"expires"`
	// made orders one principal's pending URLs (not shared).
	made time.Time
}

// serverRecord is what the callback needs of an authorization server.
type serverRecord struct {
	Resource     string `json:"resource"`
	Issuer       string `json:"issuer"`
	AuthURL      string `json:"auth_url"`
	TokenURL     string `json:"token_url"`
	RevokeURL    string `json:"revoke_url,omitempty"`
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
}

func recordOf(s *server) serverRecord {
	return serverRecord{Resource: s.resource, Issuer: s.issuer, AuthURL: s.authURL, TokenURL: s.tokenURL,
		RevokeURL: s.revokeURL, ClientID: s.clientID, ClientSecret: s.clientSecret}
}

func (r serverRecord) server() *server {
	return &server{resource: r.Resource, issuer: r.Issuer, authURL: r.AuthURL, tokenURL: r.TokenURL,
		revokeURL: r.RevokeURL, clientID: r.ClientID, clientSecret: r.ClientSecret}
}

// consentID is the id of the authorization whose state is state: what a
// waiting call and the shared records name it by. It is not the state,
// which only the browser's callback presents.
func consentID(state string) string {
	sum := sha256.Sum256([]byte("plugkit consent\x00" + state))
	return hex.EncodeToString(sum[:16])
}

// Names of the shared records of an authorization.
func pendingName(id string) string { return "consent-pending:" + id }
func endedName(id string) string   { return "consent-ended:" + id }

// waiter is a call's wait for its authorization to come back: ended
// gets how the callback ended ("" when a token was kept, else why not).
type waiter struct {
	ended   chan string
	expires time.Time
}

// ask makes an authorization URL for principal's call (ctx's) to u.
func (m *Manager) ask(ctx context.Context, u *tokenexchange.Upstream, principal string) error {
	srv, err := m.server(ctx, u)
	if err != nil {
		return err
	}
	state, verifier := randomString(), oauth2.GenerateVerifier()
	scope := u.Scope
	if scope == "" {
		scope = srv.scope
	}
	opts := []oauth2.AuthCodeOption{oauth2.S256ChallengeOption(verifier), oauth2.SetAuthURLParam("resource", srv.resource)}
	if scope != "" {
		opts = append(opts, oauth2.SetAuthURLParam("scope", scope))
	}
	now := m.now()
	cfg := m.config(srv)
	p := &pending{Principal: principal, U: *u, Srv: recordOf(srv), Verifier: verifier, Redirect: cfg.RedirectURL,
		URL: cfg.AuthCodeURL(state, opts...), Call: tokenexchange.CallOf(ctx), Expires: now.Add(PendingLife), made: now}
	id := consentID(state)
	if err := m.keep(ctx, state, id, p); err != nil {
		return err
	}
	return &Needed{Principal: principal, Upstream: u.URL, URL: p.URL, ID: id}
}

// keep records p under its state until it comes back or expires, with a
// waiter for the call that asked.
func (m *Manager) keep(ctx context.Context, state, id string, p *pending) error {
	if m.vault.Shared() {
		raw, err := json.Marshal(p)
		if err != nil {
			return err
		}
		if err := m.vault.PutTemp(ctx, pendingName(id), raw, PendingLife); err != nil {
			return fmt.Errorf("keep the pending consent: %w", err)
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	now := m.now()
	for s, q := range m.pending {
		if now.After(q.Expires) {
			delete(m.pending, s)
		}
	}
	for k, w := range m.waiters {
		if now.After(w.expires) {
			delete(m.waiters, k)
		}
	}
	if !m.vault.Shared() {
		if len(m.pending) >= maxPending {
			return fmt.Errorf("too many consents waiting for their browser (%d); try again later", maxPending)
		}
		// One principal's many calls keep a few URLs, the newest.
		var mine []string
		for s, q := range m.pending {
			if q.Principal == p.Principal && q.U.Plugin == p.U.Plugin {
				mine = append(mine, s)
			}
		}
		for len(mine) >= maxPendingEach {
			oldest := 0
			for i, s := range mine {
				if m.pending[s].made.Before(m.pending[mine[oldest]].made) {
					oldest = i
				}
			}
			delete(m.pending, mine[oldest])
			mine = append(mine[:oldest], mine[oldest+1:]...)
		}
		m.pending[state] = p
	}
	if len(m.waiters) < maxPending {
		m.waiters[id] = &waiter{ended: make(chan string, 1), expires: p.Expires}
	}
	return nil
}

// take is the pending authorization of state, removed: a state is good
// once, on whichever replica its callback lands.
func (m *Manager) take(ctx context.Context, state string) (*pending, error) {
	if state == "" {
		return nil, nil
	}
	if m.vault.Shared() {
		raw, ok, err := m.vault.TakeTemp(ctx, pendingName(consentID(state)))
		if err != nil || !ok {
			return nil, err
		}
		var p pending
		if err := json.Unmarshal(raw, &p); err != nil {
			return nil, fmt.Errorf("pending consent: %w", err)
		}
		return &p, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pending[state]
	delete(m.pending, state)
	if !ok {
		return nil, nil
	}
	return p, nil
}

// ended tells the call waiting for authorization id how it ended (""
// when a token was kept, else why not): here, and through the shared
// vault for a call waiting on another replica.
func (m *Manager) ended(ctx context.Context, id, why string) {
	m.mu.Lock()
	w, ok := m.waiters[id]
	m.mu.Unlock()
	if ok {
		// Buffered: kept for a call that starts waiting after this.
		select {
		case w.ended <- why:
		default:
		}
	}
	if m.vault.Shared() {
		// Best effort: a waiter that misses it still finds the token.
		_ = m.vault.PutTemp(ctx, endedName(id), []byte(why), PendingLife)
	}
}

// pollEvery is how often a waiting call looks for its consent in the
// vault: the callback may have landed on another replica.
const pollEvery = 500 * time.Millisecond

// Await waits, at most the manager's wait limit, for principal's
// authorization id (of a *Needed error) to come back, and returns the
// token it gave. The call also goes on when principal's token for u turns
// up another way (another of their calls' consent). The error is a
// *Needed with a fresh URL when the consent was refused or the time ran
// out, saying which.
func (m *Manager) Await(ctx context.Context, u *tokenexchange.Upstream, principal, id string) (string, error) {
	m.mu.Lock()
	w := m.waiters[id]
	m.mu.Unlock()
	var ended <-chan string
	if w != nil {
		ended = w.ended
	}
	wctx, cancel := context.WithTimeout(ctx, m.wait)
	defer cancel()
	tick := time.NewTicker(pollEvery)
	defer tick.Stop()
	why := ""
	for done := false; !done; {
		select {
		case why = <-ended:
			done = true
		case <-wctx.Done():
			if ctx.Err() != nil {
				return "", fmt.Errorf("waiting for %s's consent: %w", principal, ctx.Err())
			}
			why = fmt.Sprintf("no consent within %s", m.wait)
			done = true
		case <-tick.C:
			if t, ok, err := m.vault.Get(wctx, principal, u.Plugin); err == nil && ok && t.Upstream == u.URL && !m.stale(t) {
				done = true
				break
			}
			if m.vault.Shared() {
				if raw, ok, err := m.vault.GetTemp(wctx, endedName(id)); err == nil && ok {
					why, done = string(raw), true
				}
			}
		}
	}
	m.mu.Lock()
	delete(m.waiters, id)
	m.mu.Unlock()
	tok, err := m.Token(ctx, u, principal)
	if err != nil && why != "" {
		return "", fmt.Errorf("%s: %w", why, err)
	}
	return tok, err
}
