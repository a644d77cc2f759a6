package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// auth reads the auth block into s: static headers join the others;
// token_exchange, client_credentials or user_consent make each call carry the token the
// host sent with it.
func (s *settings) auth(cfg Config) []string {
	if len(cfg.Auth) == 0 {
		return nil
	}
	if cfg.URL == "" {
		return []string{"auth applies to url only"}
	}
	if len(cfg.Auth) > 1 {
		return []string{"write one auth block"}
	}
	a := cfg.Auth[0]
	if n := len(a.Static) + len(a.TokenExchange) + len(a.ClientCredentials) + len(a.UserConsent); n != 1 {
		return []string{fmt.Sprintf("auth holds exactly one of static, token_exchange, client_credentials or user_consent; it has %d", n)}
	}
	for _, h := range a.Static {
		for k, v := range h {
			s.headers[k] = v
		}
	}
	s.perCall = len(a.Static) == 0
	return nil
}

type bearerKey struct{}

// upstreamToken is the token the host sent with the call ctx serves (a
// test reads its own).
var upstreamToken = sdk.UpstreamToken

// withCallToken puts the token of the call ctx serves in ctx, for the
// request of that call alone; with perCall, a call the host sent no token
// with fails (the host denies such a call before it gets here).
func (s *settings) withCallToken(ctx context.Context) (context.Context, error) {
	if !s.perCall {
		return ctx, nil
	}
	tok, ok := upstreamToken(ctx)
	if !ok {
		return nil, errors.New("the host sent no upstream token with this call (auth needs one per call)")
	}
	return context.WithValue(ctx, bearerKey{}, &callBearerState{token: tok}), nil
}

// callBearerState is a call's token, and whether the upstream refused it.
type callBearerState struct {
	token   string
	refused atomic.Bool
}

// refusedToken reports whether the upstream answered 401 to a request of
// the call ctx serves, sent with its token.
func refusedToken(ctx context.Context) bool {
	st, ok := ctx.Value(bearerKey{}).(*callBearerState)
	return ok && st.refused.Load()
}

// callBearer sets the call's token, if its request has one, as the
// request's Authorization, replacing any static one; seen marks the call
// refused when the answer is 401.
func callBearer(req *http.Request) (out *http.Request, seen func(*http.Response)) {
	st, ok := req.Context().Value(bearerKey{}).(*callBearerState)
	if !ok {
		return req, func(*http.Response) {}
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+st.token)
	return req, func(resp *http.Response) {
		if resp != nil && resp.StatusCode == http.StatusUnauthorized {
			st.refused.Store(true)
		}
	}
}
