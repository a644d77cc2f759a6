package mcpserver_test

import (
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/mcpserver"
)

type withKey struct {
	key  string
	next http.RoundTripper
}

func (w withKey) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+w.key)
	return w.next.RoundTrip(r)
}

// TestAttackSessionsPerPrincipal: one reader key opened 70 sessions and
// evicted the writer's. Sessions are now capped per principal: the reader's
// flood closes only the reader's own idle sessions, and the writer's
// session, idle longest of all, still answers.
func TestAttackSessionsPerPrincipal(t *testing.T) {
	leakCheck(t)
	keysFile := filepath.Join(t.TempDir(), "keys.hcl")
	reader, err := authn.NewKey(keysFile, "reader", "agent", nil)
	if err != nil {
		t.Fatal(err)
	}
	writer, err := authn.NewKey(keysFile, "writer", "user", nil)
	if err != nil {
		t.Fatal(err)
	}
	keys, diags := authn.LoadKeys(keysFile)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	a, err := authn.New(context.Background(), authn.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	const maxSessions, perPrincipal = 8, 4
	f := newFixtureWith(t, 5*time.Second, mcpserver.Options{MaxSessions: maxSessions, MaxSessionsPerPrincipal: perPrincipal, Authenticate: a.Require})
	endpoint := serveHTTP(t, f.srv)
	as := func(key string) *rawClient {
		c := newRawClient(endpoint)
		c.http.Transport = withKey{key, c.http.Transport}
		t.Cleanup(c.close)
		return c
	}
	w := as(writer)
	ws, code, err := w.initialize()
	if err != nil || code != http.StatusOK {
		t.Fatalf("the writer's initialize: %d %v", code, err)
	}
	r := as(reader)
	var first string
	for i := range 70 {
		id, code, err := r.initialize()
		if err != nil || code != http.StatusOK {
			t.Fatalf("the reader's initialize %d: %d %v", i, code, err)
		}
		if i == 0 {
			first = id
		}
	}
	if code, err := w.ping(ws); err != nil || code != http.StatusOK {
		t.Errorf("the writer's session after the reader's 70: ping = %d %v, want 200", code, err)
	}
	if code, err := r.ping(first); err != nil || code != http.StatusNotFound {
		t.Errorf("the reader's first session: ping = %d %v, want 404 (closed for its own newer ones)", code, err)
	}
	eventually(t, "the reader holds at most its cap", func() bool { return f.srv.Sessions() <= perPrincipal+1 })
}
