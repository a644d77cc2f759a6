package consent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testoauth"
	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
	"github.com/plugkit-go/plugkit/tokenexchange"
	"github.com/plugkit-go/plugkit/vault"
)

type awaited struct {
	tok string
	err error
}

// await runs Await for principal's authorization n in the background.
func await(ctx context.Context, m *Manager, u *tokenexchange.Upstream, principal string, n *Needed) <-chan awaited {
	ch := make(chan awaited, 1)
	go func() {
		tok, err := m.Await(ctx, u, principal, n.ID)
		ch <- awaited{tok, err}
	}()
	return ch
}

func neededFor(t *testing.T, m *Manager, u *tokenexchange.Upstream, call, principal string) *Needed {
	t.Helper()
	_, err := m.Token(tokenexchange.WithCall(context.Background(), call), u, principal)
	var n *Needed
	if !errors.As(err, &n) || n.ID == "" {
		t.Fatalf("%s's call %s: %v; want a consent needed, with an id", principal, call, err)
	}
	return n
}

// stillWaiting fails when the wait ch has ended.
func stillWaiting(t *testing.T, ch <-chan awaited, what string) {
	t.Helper()
	select {
	case a := <-ch:
		t.Fatalf("%s ended: %q %v; want it still waiting", what, a.tok, a.err)
	default:
	}
}

// TestAwaitIsBoundToItsCall: a call waiting for its consent goes on with
// its principal's token once that consent comes back; another principal's
// waiting call is not woken by it; a state minted for one of alice's
// calls, presented with bob's code, completes nobody's consent and tells
// alice's waiting call that it failed; a refusal at the authorization
// server ends the wait at once, with a fresh URL.
func TestAwaitIsBoundToItsCall(t *testing.T) {
	r := setup(t, testoauth.Options{}, true, "plugkit")
	var (
		mu    sync.Mutex
		ended []string
	)
	r.m.OnEnded = func(principal, plugin, call, why string) {
		mu.Lock()
		ended = append(ended, strings.Join([]string{principal, plugin, call, why}, "|"))
		mu.Unlock()
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	na := neededFor(t, r.m, r.u, "call-a1", "user:alice")
	nb := neededFor(t, r.m, r.u, "call-b1", "user:bob")
	aliceWait, bobWait := await(ctx, r.m, r.u, "user:alice", na), await(ctx, r.m, r.u, "user:bob", nb)

	if status, text := land(t, browser(t, na.URL, "alice", testoauth.Users["alice"]).String()); status != http.StatusOK {
		t.Fatalf("callback: %d %s", status, text)
	}
	a := <-aliceWait
	if a.err != nil {
		t.Fatalf("alice's waiting call: %v", a.err)
	}
	if user, ok := r.as.Check(a.tok, r.res.URL); !ok || user != "alice" {
		t.Fatalf("alice's waiting call got a token of %q (%v)", user, ok)
	}
	stillWaiting(t, bobWait, "bob's wait, after alice consented")

	// Another call of alice's, and bob's browser answer sent behind its
	// state: the code was issued for bob's authorization, so it does not
	// redeem alice's; neither gets a token from it, alice's call is told
	// it failed, bob's goes on waiting.
	r.m.wait = time.Minute
	if err := r.m.Vault().Delete(ctx, "user:alice", "tracker"); err != nil {
		t.Fatal(err)
	}
	na2 := neededFor(t, r.m, r.u, "call-a2", "user:alice")
	alice2 := await(ctx, r.m, r.u, "user:alice", na2)
	bobLoc := browser(t, nb.URL, "bob", testoauth.Users["bob"])
	mixed := *bobLoc
	mq := mixed.Query()
	aq, _ := url.Parse(na2.URL)
	mq.Set("state", aq.Query().Get("state"))
	mixed.RawQuery = mq.Encode()
	if status, text := land(t, mixed.String()); status != http.StatusBadGateway {
		t.Fatalf("bob's code behind alice's state: %d %s", status, text)
	}
	a2 := <-alice2
	var again *Needed
	if a2.err == nil || !strings.Contains(a2.err.Error(), "refused the code") || !errors.As(a2.err, &again) || again.URL == na2.URL {
		t.Fatalf("alice's call whose state was spent on bob's code: %q %v; want it told the code was refused, with a new URL", a2.tok, a2.err)
	}
	for _, who := range []string{"user:alice", "user:bob"} {
		if _, ok, _ := r.m.Vault().Get(ctx, who, "tracker"); ok {
			t.Errorf("%s holds a token from a code presented behind another's state", who)
		}
	}
	stillWaiting(t, bobWait, "bob's wait, after his code was spent behind alice's state")
	mu.Lock()
	if want := []string{"user:alice|tracker|call-a1|", "user:alice|tracker|call-a2|the authorization server refused the code"}; !slices.Equal(ended, want) {
		t.Errorf("consents ended %q; want %q (each named by the call that asked)", ended, want)
	}
	mu.Unlock()
	cancel()
	if b := <-bobWait; b.err == nil || !errors.Is(b.err, context.Canceled) {
		t.Fatalf("bob's wait, its call gone: %q %v", b.tok, b.err)
	}

	// Refused at the authorization server: the wait ends at once.
	nc := neededFor(t, r.m, r.u, "call-c1", "user:carol")
	carol := await(context.Background(), r.m, r.u, "user:carol", nc)
	cq, _ := url.Parse(nc.URL)
	if status, _ := land(t, r.cb.URL+CallbackPath+"?error=access_denied&state="+url.QueryEscape(cq.Query().Get("state"))); status != http.StatusForbidden {
		t.Fatalf("a refusal's callback: %d", status)
	}
	if c := <-carol; c.err == nil || !strings.Contains(c.err.Error(), "access_denied") || !errors.As(c.err, new(*Needed)) {
		t.Fatalf("carol's wait, refused: %q %v", c.tok, c.err)
	}
}

// TestAwaitTimesOut: a call whose principal never consents is denied
// once the wait limit passes, with a URL to try again.
func TestAwaitTimesOut(t *testing.T) {
	r := setup(t, testoauth.Options{}, true, "plugkit")
	r.m.wait = 300 * time.Millisecond
	n := neededFor(t, r.m, r.u, "call-1", "user:alice")
	_, err := r.m.Await(context.Background(), r.u, "user:alice", n.ID)
	if err == nil || !strings.Contains(err.Error(), "no consent within 300ms") || !errors.As(err, new(*Needed)) {
		t.Fatalf("a wait nobody answers: %v", err)
	}
}

// TestPendingConsentAcrossReplicas: two managers share a Redis vault and
// one callback address, which a load balancer sends to the second; alice's
// call waits on the first, her browser's answer lands on the second, and
// her call goes on with her token. The pending consent in Redis holds no
// verifier in the clear, and a state is good once across both.
func TestPendingConsentAcrossReplicas(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	dir := t.TempDir()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "vault.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cb := httptest.NewServer(nil)
	defer cb.Close()
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	replica := func() *Manager {
		s, err := vault.NewRedisStore(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		v, err := vault.Open(keyFile, s)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { v.Close() })
		return New(v, cb.URL, &http.Client{Transport: tr, Timeout: RequestTimeout})
	}
	a, b := replica(), replica()
	cb.Config.Handler = b.Handler()
	as := testoauth.StartAuthServer(t, testoauth.Options{Clients: map[string][]string{"plugkit": {cb.URL + CallbackPath}}})
	res := testoauth.StartResource(t, as, true)
	u := &tokenexchange.Upstream{Plugin: "tracker", URL: res.URL, Mode: tokenexchange.UserConsent, Scope: "issues:read", ClientID: "plugkit"}

	n := neededFor(t, a, u, "call-1", "user:alice")
	wait := await(context.Background(), a, u, "user:alice", n)
	loc := browser(t, n.URL, "alice", testoauth.Users["alice"])
	if status, text := land(t, loc.String()); status != http.StatusOK || !strings.Contains(text, "Access allowed") {
		t.Fatalf("callback on the second replica: %d %s", status, text)
	}
	got := <-wait
	if got.err != nil {
		t.Fatalf("alice's call waiting on the first replica: %v", got.err)
	}
	if user, ok := as.Check(got.tok, res.URL); !ok || user != "alice" {
		t.Fatalf("the waiting call got a token of %q (%v)", user, ok)
	}
	// The same answer again, on either replica: the state is spent.
	cb.Config.Handler = a.Handler()
	if status, _ := land(t, loc.String()); status != http.StatusBadRequest {
		t.Errorf("the answer again, on the first replica: %d; want 400", status)
	}

	// A refusal landing on the second replica ends the first's wait at
	// once (through the shared record of how it ended).
	cb.Config.Handler = b.Handler()
	nb := neededFor(t, a, u, "call-2", "user:bob")
	bobWait := await(context.Background(), a, u, "user:bob", nb)
	bq, _ := url.Parse(nb.URL)
	if status, _ := land(t, cb.URL+CallbackPath+"?error=access_denied&state="+url.QueryEscape(bq.Query().Get("state"))); status != http.StatusForbidden {
		t.Fatalf("bob's refusal on the second replica: %d", status)
	}
	if w := <-bobWait; w.err == nil || !strings.Contains(w.err.Error(), "access_denied") {
		t.Fatalf("bob's wait on the first replica after his refusal on the second: %q %v", w.tok, w.err)
	}

	// What Redis holds of a pending consent is sealed.
	nc := neededFor(t, a, u, "call-3", "user:carol")
	s, _ := vault.NewRedisStore(srv.URL())
	defer s.Close()
	raw, ok, err := s.GetTemp(context.Background(), pendingName(nc.ID))
	if err != nil || !ok {
		t.Fatalf("no pending consent in Redis: %v %v", ok, err)
	}
	if strings.Contains(string(raw), "user:carol") || strings.Contains(string(raw), "verifier") {
		t.Error("Redis holds a pending consent in the clear")
	}
}
