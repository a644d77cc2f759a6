package tokenexchange

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
)

// Outcome is what one request for a token came to, for metrics.
type Outcome string

const (
	// Exchanged: a token was obtained from the token endpoint.
	Exchanged Outcome = "exchanged"
	// Cached: a token obtained earlier served the call.
	Cached Outcome = "cached"
	// Failed: no token; the call is denied.
	Failed Outcome = "failed"
	// ConsentNeeded: a user_consent upstream, and the principal has not
	// consented (or must again); the call is denied with the URL.
	ConsentNeeded Outcome = "consent_needed"
)

// ConsentSource is each principal's own token for a user_consent
// upstream. Its error says what the principal has to do (consent at a
// URL) or what failed; it never holds a token.
type ConsentSource interface {
	Token(ctx context.Context, u *Upstream, principal string) (string, error)
}

// Refused is told that u answered 401 to the token principal's call
// carried. For user_consent, the principal's token is dropped (when
// Consent can drop one) and the error says how to consent again; other
// modes get nil: nothing cached is known to be bad.
func (b *Broker) Refused(ctx context.Context, u *Upstream, principal string) error {
	if u.Mode != UserConsent || b.Consent == nil {
		return nil
	}
	d, ok := b.Consent.(interface {
		Drop(ctx context.Context, principal, plugin string) error
	})
	if !ok {
		return nil
	}
	if err := d.Drop(ctx, principal, u.Plugin); err != nil {
		return err
	}
	_, err := b.Consent.Token(ctx, u, principal)
	return err
}

// Defaults.
const (
	// RequestTimeout bounds one request to a token endpoint.
	RequestTimeout = 10 * time.Second
	// maxEntries bounds the cache; past it the expired entries go, then
	// any.
	maxEntries = 10000
	// maxMargin is the most a cached token is renewed before its expiry.
	maxMargin = 30 * time.Second
)

// Broker obtains and caches upstream tokens. Its zero value is not usable:
// make one with New.
type Broker struct {
	client *http.Client
	// OnOutcome, when set before use, is told of each Token's outcome by
	// plugin (for metrics). It must not block.
	OnOutcome func(plugin string, o Outcome)
	// Consent, when set before use, serves the upstreams whose auth is
	// user_consent (package consent); without it their calls fail.
	Consent ConsentSource
	// now is the clock (tests may not replace it; kept for clarity).
	now func() time.Time

	mu    sync.Mutex
	cache map[string]entry
	group singleflight.Group
}

type entry struct {
	token string
	// renew is when the token stops being served from the cache: shortly
	// before it expires.
	renew time.Time
}

// New returns a broker that reaches token endpoints with client (nil: a
// client of its own with RequestTimeout).
func New(client *http.Client) *Broker {
	if client == nil {
		client = &http.Client{Timeout: RequestTimeout}
	}
	return &Broker{client: client, now: time.Now, cache: map[string]entry{}}
}

// Token returns the token for a call to u made for principal (its id and
// kind, "kind:id"), whose own token ctx carries (WithSubjectToken) for
// token_exchange. A token cached for the same principal, subject token and
// settings is served until shortly before it expires; concurrent calls
// that need the same token share one request. The error is an *Error.
func (b *Broker) Token(ctx context.Context, u *Upstream, principal string) (string, error) {
	tok, outcome, err := b.token(ctx, u, principal)
	if b.OnOutcome != nil {
		b.OnOutcome(u.Plugin, outcome)
	}
	return tok, err
}

func (b *Broker) token(ctx context.Context, u *Upstream, principal string) (string, Outcome, error) {
	key := u.key()
	subject := ""
	switch u.Mode {
	case Exchange:
		subject = subjectToken(ctx)
		if subject == "" {
			return "", Failed, &Error{Upstream: u.name(), Reason: "the call carries no OAuth access token of its principal to exchange (token_exchange needs a caller authenticated by mcp_auth oauth)"}
		}
		sum := sha256.Sum256([]byte(subject))
		key += "\x00" + principal + "\x00" + hex.EncodeToString(sum[:])
	case ClientCredentials:
	case UserConsent:
		if b.Consent == nil {
			return "", Failed, &Error{Upstream: u.name(), Reason: "the host has no user_consent block to keep its users' tokens"}
		}
		tok, err := b.Consent.Token(ctx, u, principal)
		var asked interface{ ConsentURL() string }
		if errors.As(err, &asked) {
			return "", ConsentNeeded, err
		}
		if err != nil {
			return "", Failed, err
		}
		return tok, Cached, nil
	default:
		return "", Failed, &Error{Upstream: u.name(), Reason: "unknown auth mode " + string(u.Mode)}
	}
	if tok, ok := b.cached(key); ok {
		return tok, Cached, nil
	}
	v, err, _ := b.group.Do(key, func() (any, error) {
		if tok, ok := b.cached(key); ok {
			return tok, nil
		}
		// The request outlives a caller that gives up: others may wait on it.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), RequestTimeout)
		defer cancel()
		var (
			tok  string
			life time.Duration
			err  error
		)
		if u.Mode == Exchange {
			tok, life, err = b.exchange(rctx, u, subject)
		} else {
			tok, life, err = b.clientCredentials(rctx, u)
		}
		if err != nil {
			return nil, err
		}
		b.store(key, tok, life)
		return tok, nil
	})
	if err != nil {
		var e *Error
		if !errors.As(err, &e) {
			err = &Error{Upstream: u.name(), Reason: err.Error()}
		}
		return "", Failed, err
	}
	return v.(string), Exchanged, nil
}

func (b *Broker) cached(key string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	e, ok := b.cache[key]
	if !ok {
		return "", false
	}
	if !b.now().Before(e.renew) {
		delete(b.cache, key)
		return "", false
	}
	return e.token, true
}

// store caches a token that lives life (0: unknown, not cached) until
// shortly before it expires: a tenth of its life before, at most maxMargin.
func (b *Broker) store(key, tok string, life time.Duration) {
	if life <= 0 {
		return
	}
	margin := min(life/10, maxMargin)
	now := b.now()
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.cache) >= maxEntries {
		for k, e := range b.cache {
			if !now.Before(e.renew) {
				delete(b.cache, k)
			}
		}
		for k := range b.cache {
			if len(b.cache) < maxEntries {
				break
			}
			delete(b.cache, k)
		}
	}
	b.cache[key] = entry{token: tok, renew: now.Add(life - margin)}
}
