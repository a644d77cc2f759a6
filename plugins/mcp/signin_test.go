package main

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/mcptestserver"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

// TestSignInWhenTheServerRefusesTheSession: a server that answers 401 to
// every request without its token. With a per-call auth the bridge starts
// with the sign-in tool alone; a call of it without a token fails, one
// with a token the server refuses fails and leaves the sign-in tool, and
// one with a good token lists the server's tools with it, which replace
// the sign-in tool; the session's own requests then carry that token.
// With static headers the same server fails the start, as before.
func TestSignInWhenTheServerRefusesTheSession(t *testing.T) {
	type testToken struct{}
	upstreamToken = func(ctx context.Context) (string, bool) { s, ok := ctx.Value(testToken{}).(string); return s, ok }
	t.Cleanup(func() { upstreamToken = sdk.UpstreamToken })
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
	srv := mcptestserver.New(io.Discard)
	var (
		mu   sync.Mutex
		seen []string
	)
	inner := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv.Server }, nil)
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		mu.Lock()
		seen = append(seen, auth)
		mu.Unlock()
		if auth != "Bearer good" {
			w.Header().Set("WWW-Authenticate", `Bearer resource_metadata="`+"http://"+r.Host+`/.well-known/oauth-protected-resource"`)
			http.Error(w, "a token is needed", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(hs.Close)
	t.Cleanup(hs.CloseClientConnections)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	static, err := check(Config{URL: hs.URL, Prefix: strPtr("up"), Auth: []AuthBlock{{Static: []map[string]string{{"Authorization": "Bearer bad"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	sb := newBridge(static, hclog.NewNullLogger(), newFakeHost().batch, func(error) {})
	if err := sb.start(ctx); err == nil {
		sb.close()
		t.Fatal("a static-auth bridge refused by the server started")
	}

	set, err := check(Config{URL: hs.URL, Prefix: strPtr("up"), Auth: []AuthBlock{{UserConsent: []ConsentAuth{{ClientID: "plugkit"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	host := newFakeHost()
	b := newBridge(set, hclog.NewNullLogger(), host.batch, func(error) {})
	if err := b.start(ctx); err != nil {
		t.Fatalf("a per-call bridge refused by the server: %v; want it to wait for a sign-in", err)
	}
	defer b.close()
	names := func() []string {
		host.mu.Lock()
		defer host.mu.Unlock()
		var n []string
		for k := range host.tools {
			n = append(n, k)
		}
		slices.Sort(n)
		return n
	}
	if got := names(); !slices.Equal(got, []string{"up_sign_in"}) {
		t.Fatalf("registered %v; want up_sign_in alone", got)
	}
	host.mu.Lock()
	signIn := host.tools["up_sign_in"]
	host.mu.Unlock()
	if _, err := signIn.Execute(ctx, &sdk.Call{}); err == nil {
		t.Error("a sign-in without a token succeeded")
	}
	if _, err := signIn.Execute(context.WithValue(ctx, testToken{}, "bad"), &sdk.Call{}); err == nil {
		t.Error("a sign-in with a token the server refuses succeeded")
	}
	if got := names(); !slices.Equal(got, []string{"up_sign_in"}) {
		t.Fatalf("after a refused sign-in: %v; want up_sign_in alone", got)
	}
	out, err := signIn.Execute(context.WithValue(ctx, testToken{}, "good"), &sdk.Call{})
	if err != nil {
		t.Fatalf("sign-in with a good token: %v", err)
	}
	if s, _ := out.(string); !strings.Contains(s, "signed in") {
		t.Errorf("sign-in answered %v", out)
	}
	got := names()
	if slices.Contains(got, "up_sign_in") || !slices.Contains(got, "up_echo") {
		t.Fatalf("after the sign-in: %v; want the server's tools in the sign-in tool's place", got)
	}
	// A call carries its own token; the session's requests the signer's.
	if _, err := b.call(context.WithValue(ctx, testToken{}, "good"), "echo", []byte(`{"message":"x"}`)); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	last := seen[len(seen)-1]
	mu.Unlock()
	if last != "Bearer good" {
		t.Errorf("the last request carried %q", last)
	}
}
