package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/wire"
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
// request's Authorization, replacing any static one. seen marks the call
// refused when the answer is 401, and answers the request in its place
// with a JSON-RPC error of the same id: the SDK ends the whole session on
// an HTTP error, and one user's dead token must not cut every user's calls.
func callBearer(req *http.Request) (out *http.Request, seen func(*http.Response) *http.Response) {
	st, ok := req.Context().Value(bearerKey{}).(*callBearerState)
	if !ok {
		return req, func(r *http.Response) *http.Response { return r }
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+st.token)
	var id json.RawMessage
	if req.Method == http.MethodPost && req.GetBody != nil {
		if body, err := req.GetBody(); err == nil {
			var msg struct {
				ID json.RawMessage `json:"id"`
			}
			if json.NewDecoder(io.LimitReader(body, maxIDScan)).Decode(&msg) == nil {
				id = msg.ID
			}
			body.Close()
		}
	}
	return req, func(resp *http.Response) *http.Response {
		if resp == nil || resp.StatusCode != http.StatusUnauthorized {
			return resp
		}
		st.refused.Store(true)
		if len(id) == 0 {
			return resp
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxIDScan))
		resp.Body.Close()
		msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id,
			"error": map[string]any{"code": -32001, "message": wire.UpstreamRefused}})
		return &http.Response{StatusCode: http.StatusOK, Status: "200 OK", Proto: resp.Proto, ProtoMajor: resp.ProtoMajor, ProtoMinor: resp.ProtoMinor,
			Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(bytes.NewReader(msg)),
			ContentLength: int64(len(msg)), Request: resp.Request}
	}
}

// maxIDScan bounds what is read of a request to find its JSON-RPC id, and
// of a 401's body before it is dropped.
const maxIDScan = 1 << 20
