package tokenexchange

import (
	"context"
	"errors"
)

type callKey struct{}

// WithCall is ctx naming the call (its execution id) a token is asked for:
// a user_consent authorization is bound to the call that started it.
func WithCall(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, callKey{}, id)
}

// CallOf is the call id WithCall put in ctx ("" for none).
func CallOf(ctx context.Context) string {
	id, _ := ctx.Value(callKey{}).(string)
	return id
}

// Asked is the error of a call whose principal must consent first: the
// authorization URL, and the id of that authorization for a caller that
// is asked with a URL-mode elicitation and then waits (Broker.Await).
type Asked interface {
	error
	ConsentURL() string
	ConsentID() string
}

// ConsentWaiter waits for the consent a *Asked error named to complete.
type ConsentWaiter interface {
	Await(ctx context.Context, u *Upstream, principal, id string) (string, error)
}

// Await waits until principal's consent id (from an Asked error of Token)
// completes and returns the token it gave; the error says why not (the
// consent was refused, the time ran out) and never holds a token.
func (b *Broker) Await(ctx context.Context, u *Upstream, principal, id string) (string, error) {
	w, ok := b.Consent.(ConsentWaiter)
	if u.Mode != UserConsent || !ok {
		return "", errors.New("this upstream's token cannot be waited for")
	}
	tok, err := w.Await(ctx, u, principal, id)
	if b.OnOutcome != nil {
		o := Cached
		var asked Asked
		switch {
		case errors.As(err, &asked):
			o = ConsentNeeded
		case err != nil:
			o = Failed
		}
		b.OnOutcome(u.Plugin, o)
	}
	return tok, err
}
