package tokenexchange

import "context"

type subjectKey struct{}

// secret holds a token so that printing it (%v, %+v, JSON) shows nothing.
type secret struct{ s string }

func (secret) String() string   { return "[redacted]" }
func (secret) GoString() string { return "[redacted]" }

// WithSubjectToken returns ctx carrying the calling principal's own access
// token, the one its credential was checked with, for Broker.Token to
// exchange. An empty token leaves ctx as it is.
func WithSubjectToken(ctx context.Context, token string) context.Context {
	if token == "" {
		return ctx
	}
	return context.WithValue(ctx, subjectKey{}, secret{token})
}

func subjectToken(ctx context.Context) string {
	s, _ := ctx.Value(subjectKey{}).(secret)
	return s.s
}
