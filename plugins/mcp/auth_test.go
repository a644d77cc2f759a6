package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/mcptestserver"
	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// recorder is an upstream over HTTP that records the Authorization of each
// tools/call request.
type recorder struct {
	mu    sync.Mutex
	calls []string
	other []string
}

func (r *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		req.Body = io.NopCloser(bytes.NewReader(body))
		r.mu.Lock()
		if strings.Contains(string(body), `"tools/call"`) {
			r.calls = append(r.calls, req.Header.Get("Authorization"))
		} else {
			r.other = append(r.other, req.Header.Get("Authorization"))
		}
		r.mu.Unlock()
		h.ServeHTTP(w, req)
	})
}

// With token_exchange, each call's request carries that call's token and
// no other request does; a call without one fails before the upstream.
func TestPerCallBearer(t *testing.T) {
	type testToken struct{}
	upstreamToken = func(ctx context.Context) (string, bool) { s, ok := ctx.Value(testToken{}).(string); return s, ok }
	t.Cleanup(func() { upstreamToken = sdk.UpstreamToken })
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
	srv := mcptestserver.New(io.Discard)
	rec := &recorder{}
	hs := httptest.NewServer(rec.wrap(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil)))
	t.Cleanup(hs.Close)
	t.Cleanup(hs.CloseClientConnections)

	set, err := check(Config{URL: hs.URL, Prefix: strPtr(""), Headers: []map[string]string{{"Authorization": "Bearer static"}},
		Auth: []AuthBlock{{TokenExchange: []UpstreamAuth{{TokenURL: "https://issuer.example/token", Audience: "up", ClientID: "gw"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	host := newFakeHost()
	b := newBridge(set, hclog.NewNullLogger(), host.batch, func(error) {})
	if err := b.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.close()

	if _, err := b.call(ctx, "echo", []byte(`{"message":"x"}`)); err == nil || !strings.Contains(err.Error(), "no upstream token") {
		t.Fatalf("a call without a token: %v; want it refused", err)
	}
	for _, tok := range []string{"for-alice", "for-bob"} {
		if _, err := b.call(context.WithValue(ctx, testToken{}, tok), "echo", []byte(`{"message":"x"}`)); err != nil {
			t.Fatal(err)
		}
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if want := []string{"Bearer for-alice", "Bearer for-bob"}; strings.Join(rec.calls, ",") != strings.Join(want, ",") {
		t.Errorf("tools/call requests carried %q; want %q", rec.calls, want)
	}
	for _, a := range rec.other {
		if strings.Contains(a, "for-") {
			t.Errorf("a request of the session carried a call's token: %q", a)
		}
	}
}

// With user_consent, a call whose token the upstream refuses (401) fails
// with wire.UpstreamRefused, which the host reads to drop the token; a
// call that fails otherwise does not say it, and the session goes on.
func TestRefusedTokenSaid(t *testing.T) {
	type testToken struct{}
	upstreamToken = func(ctx context.Context) (string, bool) { s, ok := ctx.Value(testToken{}).(string); return s, ok }
	t.Cleanup(func() { upstreamToken = sdk.UpstreamToken })
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
	srv := mcptestserver.New(io.Discard)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer revoked" {
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token"`)
			http.Error(w, "no", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(hs.CloseClientConnections)
	set, err := check(Config{URL: hs.URL, Prefix: strPtr(""), Auth: []AuthBlock{{UserConsent: []ConsentAuth{{Scope: "read"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	b := newBridge(set, hclog.NewNullLogger(), newFakeHost().batch, func(error) {})
	if err := b.start(ctx); err != nil {
		t.Fatal(err)
	}
	defer b.close()
	_, err = b.call(context.WithValue(ctx, testToken{}, "revoked"), "echo", []byte(`{"message":"x"}`))
	if err == nil || !strings.HasPrefix(err.Error(), wire.UpstreamRefused) {
		t.Fatalf("a call whose token got 401: %v; want it to start with %q", err, wire.UpstreamRefused)
	}
	if _, err := b.call(context.WithValue(ctx, testToken{}, "good"), "fail", []byte(`{}`)); err == nil || strings.Contains(err.Error(), wire.UpstreamRefused) {
		t.Fatalf("a call that failed otherwise: %v", err)
	}
	if _, err := b.call(context.WithValue(ctx, testToken{}, "good"), "echo", []byte(`{"message":"x"}`)); err != nil {
		t.Fatalf("a good token's call after a refused one: %v", err)
	}
}
