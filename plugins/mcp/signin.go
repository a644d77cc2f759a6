package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// A server whose auth gives each call its own token (user_consent,
// token_exchange, client_credentials) may refuse the bridge's own
// unauthenticated session: initialize and tools/list answered 401. The
// bridge then registers one tool, PREFIX_sign_in, instead of failing its
// start. Calling it goes through the host like any call of the plugin's
// tools, so the host first obtains the caller's token (for user_consent:
// the consent, asked for or waited on); the bridge opens its session with
// that token, lists the server's tools with it and registers them in the
// sign-in tool's place. The session's own requests (initialize, tools/list
// after a list change) keep carrying that token; every call carries its
// caller's own, as before. The list is therefore the view of the first
// principal who signed in; when their token is refused, list changes are
// not followed (the tools stay as they were), and a restart of the plugin
// asks for a sign-in again.

// signInKey is the sign-in tool's key among the bridged tools: no server
// tool has a NUL in its name.
const signInKey = "\x00sign_in"

// errSignIn marks a start whose unauthenticated session the server
// refused with 401.
type errSignIn struct{ err error }

func (e *errSignIn) Error() string { return e.err.Error() }
func (e *errSignIn) Unwrap() error { return e.err }

// sessionToken is the token the session's own requests carry once a
// principal signed in ("" before).
type sessionToken struct{ tok atomic.Pointer[string] }

func (s *sessionToken) get() string {
	if p := s.tok.Load(); p != nil {
		return *p
	}
	return ""
}

// headerOf is the bridge's header transport under t, if t is HTTP.
func headerOf(t mcp.Transport) *headerTransport {
	st, ok := t.(*mcp.StreamableClientTransport)
	if !ok || st.HTTPClient == nil {
		return nil
	}
	ht, _ := st.HTTPClient.Transport.(*headerTransport)
	return ht
}

// refusedUnauthenticated reports whether the session's start failed on a
// 401 to a request of its own, for a server whose calls carry their own
// tokens: the bridge then waits for a sign-in.
func (b *bridge) refusedUnauthenticated(t mcp.Transport) bool {
	ht := headerOf(t)
	return b.set.perCall && ht != nil && ht.unauthorized.Load() && b.session.get() == ""
}

// awaitSignIn registers the sign-in tool alone.
func (b *bridge) awaitSignIn(ctx context.Context, why error) error {
	b.log.Warn("the MCP server refuses the bridge's session without a token: its tools are listed once a principal signs in", "server", b.set.describe(), "tool", b.set.toolName("sign_in"), "error", why)
	spec := sdk.Tool{
		Name:        b.set.toolName("sign_in"),
		OwnerPrefix: b.set.ownerPrefix,
		Description: fmt.Sprintf("Sign in to the MCP server %s, which lists its tools to signed-in users only: after the first sign-in, its tools are listed in this one's place.", b.set.describe()),
		Parameters:  `{"type":"object"}`,
		ReadOnly:    true,
		Idempotent:  true,
		Timeout:     b.set.timeout,
		Execute: func(ctx context.Context, _ *sdk.Call) (any, error) {
			return b.signIn(ctx)
		},
	}
	return b.register(ctx, map[string]sdk.Tool{signInKey: spec})
}

// signIn opens the session with the token the host sent with this call,
// lists the server's tools with it and registers them.
func (b *bridge) signIn(ctx context.Context) (any, error) {
	tok, ok := upstreamToken(ctx)
	if !ok || tok == "" {
		return nil, errors.New("the host sent no upstream token with this call")
	}
	b.signMu.Lock()
	defer b.signMu.Unlock()
	b.mu.Lock()
	started := b.cs != nil
	b.mu.Unlock()
	if started {
		return "signed in: the server's tools are listed", nil
	}
	b.session.tok.Store(&tok)
	t, _, err := b.transport()
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(b.base)
	defer cancel()
	defer context.AfterFunc(ctx, cancel)()
	cs, err := connect(cctx, b.set, t, nil, b.listChanged, b.resourceUpdated, b.elicit)
	if err != nil {
		b.session.tok.Store(nil)
		if ht := headerOf(t); ht != nil {
			ht.CloseIdleConnections()
		}
		return nil, fmt.Errorf("sign in: %w", err)
	}
	b.mu.Lock()
	if b.closing {
		b.mu.Unlock()
		_ = cs.Close()
		return nil, errors.New("the MCP bridge is stopping")
	}
	b.cs = cs
	if st, ok := t.(*mcp.StreamableClientTransport); ok {
		b.web = st.HTTPClient
	}
	b.mu.Unlock()
	want, err := b.list(cctx)
	if err != nil {
		b.mu.Lock()
		b.cs, b.web = nil, nil
		b.mu.Unlock()
		b.session.tok.Store(nil)
		_ = cs.Close()
		return nil, fmt.Errorf("sign in: %w", err)
	}
	b.wg.Add(1)
	go b.watch()
	// The sign-in tool goes, the server's tools come, in one batch; the
	// host's answer to this call may come before the batch's.
	if err := b.register(b.base, want); err != nil {
		return nil, err
	}
	b.wg.Add(1)
	go b.follow()
	return fmt.Sprintf("signed in: %d tools of %s are now listed", len(want), b.set.describe()), nil
}

// sessionBearer sets the session's token on a request of the session's
// own (one that carries no call's token).
func (t *headerTransport) sessionBearer(req *http.Request) *http.Request {
	if t.session == nil {
		return req
	}
	tok := t.session.get()
	if tok == "" {
		return req
	}
	if _, ok := req.Context().Value(bearerKey{}).(*callBearerState); ok {
		return req
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+tok)
	return req
}
