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

	"github.com/plugkit-go/plugkit/internal/mcptestserver"
	"github.com/plugkit-go/plugkit/shared/sdk"
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
