package consent

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/testoauth"
	"github.com/plugkit-go/plugkit/tokenexchange"
	"github.com/plugkit-go/plugkit/vault"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type rig struct {
	as        *testoauth.AuthServer
	res       *testoauth.Resource
	m         *Manager
	u         *tokenexchange.Upstream
	vaultFile string
	cb        *httptest.Server
}

// setup is a manager whose callback listener runs on a test server, in
// front of a protected upstream; client is the plugin's client_id ("" for
// CIMD or registration).
func setup(t *testing.T, o testoauth.Options, strict bool, client string) *rig {
	t.Helper()
	dir := t.TempDir()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "vault.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := &rig{vaultFile: filepath.Join(dir, "tokens.vault")}
	v, err := vault.Open(keyFile, vault.NewFileStore(r.vaultFile))
	if err != nil {
		t.Fatal(err)
	}
	// The callback listener's address must be known before the manager.
	r.cb = httptest.NewUnstartedServer(nil)
	r.cb.Start()
	t.Cleanup(r.cb.Close)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	r.m = New(v, r.cb.URL, &http.Client{Transport: tr, Timeout: RequestTimeout})
	r.cb.Config.Handler = r.m.Handler()
	if o.Clients == nil && client != "" {
		o.Clients = map[string][]string{client: {r.cb.URL + CallbackPath}}
	}
	r.as = testoauth.StartAuthServer(t, o)
	r.res = testoauth.StartResource(t, r.as, strict)
	r.u = &tokenexchange.Upstream{Plugin: "tracker", URL: r.res.URL, Mode: tokenexchange.UserConsent, Scope: "issues:read", ClientID: client}
	return r
}

// browser follows the consent page as user: it signs in and allows, and
// returns the redirect to the callback (not followed).
func browser(t *testing.T, authURL, user, password string) *url.URL {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Jar: jar, Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Get(authURL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("authorization page: %s %s", resp.Status, body)
	}
	form := url.Values{"user": {user}, "password": {password}, "decision": {"allow"}}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`).FindAllStringSubmatch(string(body), -1) {
		form.Set(m[1], htmlUnescape(m[2]))
	}
	u, _ := url.Parse(authURL)
	resp, err = c.PostForm(u.Scheme+"://"+u.Host+"/authorize", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusFound {
		t.Fatalf("consent: %s", resp.Status)
	}
	loc, err := resp.Location()
	if err != nil {
		t.Fatal(err)
	}
	return loc
}

func htmlUnescape(s string) string {
	return strings.NewReplacer("&amp;", "&", "&#43;", "+", "&#34;", `"`, "&#39;", "'", "&lt;", "<", "&gt;", ">").Replace(s)
}

// land sends the browser back to the callback; it returns the status and
// the page's text.
func land(t *testing.T, loc string) (int, string) {
	t.Helper()
	resp, err := http.Get(loc)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

func needed(t *testing.T, r *rig, principal string) *Needed {
	t.Helper()
	_, err := r.m.Token(context.Background(), r.u, principal)
	var n *Needed
	if !errors.As(err, &n) {
		t.Fatalf("%s's first token: %v; want a consent to be needed", principal, err)
	}
	return n
}

func TestConsentFlow(t *testing.T) {
	r := setup(t, testoauth.Options{}, true, "plugkit")
	ctx := context.Background()
	na := needed(t, r, "user:alice")
	q, _ := url.Parse(na.URL)
	v := q.Query()
	for k, want := range map[string]string{"client_id": "plugkit", "code_challenge_method": "S256", "resource": r.res.URL,
		"scope": "issues:read", "response_type": "code", "redirect_uri": r.cb.URL + CallbackPath} {
		if v.Get(k) != want {
			t.Errorf("authorization URL %s = %q; want %q", k, v.Get(k), want)
		}
	}
	if len(v.Get("state")) < 40 || v.Get("code_challenge") == "" {
		t.Errorf("authorization URL without a strong state or a challenge: %s", na.URL)
	}
	if !strings.Contains(na.Error(), na.URL) || !strings.Contains(na.Error(), "call again") {
		t.Errorf("message %q does not name the URL and say to call again", na.Error())
	}
	// Asked again before consenting: a URL of that call's own (a state
	// is bound to the call that asked).
	if again := needed(t, r, "user:alice"); again.URL == na.URL || again.ID == na.ID {
		t.Error("a second call got the first call's authorization")
	}
	nb := needed(t, r, "user:bob")
	if nb.URL == na.URL {
		t.Fatal("bob got alice's URL")
	}

	loc := browser(t, na.URL, "alice", testoauth.Users["alice"])
	if status, text := land(t, loc.String()); status != http.StatusOK || !strings.Contains(text, "Access allowed") {
		t.Fatalf("callback: %d %s", status, text)
	}
	tok, err := r.m.Token(ctx, r.u, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	if user, ok := r.as.Check(tok, r.res.URL); !ok || user != "alice" {
		t.Fatalf("alice's token stands for %q (%v)", user, ok)
	}
	if _, err := r.m.Token(ctx, r.u, "user:bob"); !errors.As(err, new(*Needed)) {
		t.Errorf("bob after alice consented: %v; want his own consent needed", err)
	}
	raw, _ := os.ReadFile(r.vaultFile)
	if strings.Contains(string(raw), tok) || strings.Contains(string(raw), "at-alice") || strings.Contains(string(raw), "rt-alice") {
		t.Error("the vault file holds a token in the clear")
	}

	// The same callback again (a replayed code and state): refused, and
	// the token stays.
	if status, text := land(t, loc.String()); status != http.StatusBadRequest || !strings.Contains(text, "already used") {
		t.Errorf("replayed callback: %d %s", status, text)
	}
	// A forged state.
	forged := *loc
	fq := forged.Query()
	fq.Set("state", "forged-"+fq.Get("state"))
	forged.RawQuery = fq.Encode()
	if status, _ := land(t, forged.String()); status != http.StatusBadRequest {
		t.Errorf("forged state: %d", status)
	}

	// Bob signs in, but his browser's answer is sent with a state of
	// carol's: the code was issued for bob's PKCE challenge, so carol's
	// verifier does not redeem it, and carol gets no token of bob's.
	nc := needed(t, r, "user:carol")
	bobLoc := browser(t, nb.URL, "bob", testoauth.Users["bob"])
	cq, _ := url.Parse(nc.URL)
	mixed := *bobLoc
	mq := mixed.Query()
	mq.Set("state", cq.Query().Get("state"))
	mixed.RawQuery = mq.Encode()
	if status, text := land(t, mixed.String()); status != http.StatusBadGateway || !strings.Contains(text, "invalid_grant") {
		t.Errorf("bob's code with carol's state: %d %s", status, text)
	}
	if _, ok, _ := r.m.Vault().Get(ctx, "user:carol", "tracker"); ok {
		t.Fatal("carol got a token from bob's consent")
	}
	// Bob's own answer, now: his code was spent by the attempt, so it is
	// refused too (a code is good once); he consents again.
	if status, _ := land(t, bobLoc.String()); status != http.StatusBadGateway {
		t.Errorf("bob's spent code: %d", status)
	}
	if _, err := r.m.Token(ctx, r.u, "user:bob"); !errors.As(err, new(*Needed)) {
		t.Errorf("bob after a refused callback: %v", err)
	}
}

func TestRefreshAndRevocation(t *testing.T) {
	r := setup(t, testoauth.Options{}, false, "plugkit")
	ctx := context.Background()
	loc := browser(t, needed(t, r, "user:alice").URL, "alice", testoauth.Users["alice"])
	if status, text := land(t, loc.String()); status != http.StatusOK {
		t.Fatalf("callback: %d %s", status, text)
	}
	first, err := r.m.Token(ctx, r.u, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	// Later than the token's life: refreshed, without a browser.
	r.m.now = func() time.Time { return time.Now().Add(2 * time.Hour) }
	second, err := r.m.Token(ctx, r.u, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	if second == first {
		t.Fatal("an expired token was served, not refreshed")
	}
	if user, ok := r.as.Check(second, r.res.URL); !ok || user != "alice" {
		t.Fatalf("the refreshed token stands for %q (%v)", user, ok)
	}
	var refreshes int
	for _, e := range r.as.Events() {
		if e.Kind == "refresh" {
			refreshes++
		}
	}
	if refreshes != 1 {
		t.Errorf("%d refreshes; want 1", refreshes)
	}
	// The refresh token revoked at the server: the next refresh fails
	// with invalid_grant, the record goes, and alice is asked again.
	rec, _, _ := r.m.Vault().Get(ctx, "user:alice", "tracker")
	r.as.Revoke(rec.RefreshToken)
	r.m.now = func() time.Time { return time.Now().Add(4 * time.Hour) }
	if _, err := r.m.Token(ctx, r.u, "user:alice"); !errors.As(err, new(*Needed)) {
		t.Fatalf("after the refresh token was revoked: %v; want consent needed", err)
	}
	if _, ok, _ := r.m.Vault().Get(ctx, "user:alice", "tracker"); ok {
		t.Error("the dead record is still in the vault")
	}
}

// TestClientIdentity: without a client_id, a server that takes client ID
// metadata documents fetches the host's; one that offers only dynamic
// registration registers the host; one with neither is refused with a
// message saying to set client_id.
func TestClientIdentity(t *testing.T) {
	t.Run("cimd", func(t *testing.T) {
		r := setup(t, testoauth.Options{CIMD: true, DCR: true}, true, "")
		n := needed(t, r, "user:alice")
		q, _ := url.Parse(n.URL)
		if got := q.Query().Get("client_id"); got != r.cb.URL+ClientPath {
			t.Fatalf("client_id %q; want the host's metadata document", got)
		}
		if status, text := land(t, browser(t, n.URL, "alice", testoauth.Users["alice"]).String()); status != http.StatusOK {
			t.Fatalf("callback: %d %s", status, text)
		}
		if _, err := r.m.Token(context.Background(), r.u, "user:alice"); err != nil {
			t.Fatal(err)
		}
		var fetched bool
		for _, e := range r.as.Events() {
			fetched = fetched || e.Kind == "cimd"
		}
		if !fetched {
			t.Error("the server never fetched the host's client metadata document")
		}
	})
	t.Run("registration", func(t *testing.T) {
		r := setup(t, testoauth.Options{DCR: true}, false, "")
		n := needed(t, r, "user:alice")
		q, _ := url.Parse(n.URL)
		if !strings.HasPrefix(q.Query().Get("client_id"), "dyn-") {
			t.Fatalf("client_id %q; want a registered one", q.Query().Get("client_id"))
		}
		if status, text := land(t, browser(t, n.URL, "alice", testoauth.Users["alice"]).String()); status != http.StatusOK {
			t.Fatalf("callback: %d %s", status, text)
		}
		if _, err := r.m.Token(context.Background(), r.u, "user:alice"); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("none", func(t *testing.T) {
		r := setup(t, testoauth.Options{}, true, "")
		_, err := r.m.Token(context.Background(), r.u, "user:alice")
		if err == nil || errors.As(err, new(*Needed)) || !strings.Contains(err.Error(), "set client_id") {
			t.Fatalf("no way to identify the host: %v", err)
		}
	})
}

func TestBearerParams(t *testing.T) {
	got := bearerParams([]string{`Basic realm="x"`, `Bearer error="invalid_token", resource_metadata="https://r.example/.well-known/oauth-protected-resource/mcp", scope=files:read`})
	if got["resource_metadata"] != "https://r.example/.well-known/oauth-protected-resource/mcp" || got["scope"] != "files:read" || got["error"] != "invalid_token" {
		t.Fatalf("%v", got)
	}
}

// TestRevokeAtServer: Revoke drops the record and revokes its tokens at
// the authorization server (RFC 7009).
func TestRevokeAtServer(t *testing.T) {
	r := setup(t, testoauth.Options{}, true, "plugkit")
	ctx := context.Background()
	if status, text := land(t, browser(t, needed(t, r, "user:alice").URL, "alice", testoauth.Users["alice"]).String()); status != http.StatusOK {
		t.Fatalf("callback: %d %s", status, text)
	}
	tok, err := r.m.Token(ctx, r.u, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.m.Revoke(ctx, "alice", "")
	if err != nil || len(got) != 1 || got[0].Principal != "user:alice" || got[0].AtServer != "revoked" {
		t.Fatalf("Revoke = %+v, %v", got, err)
	}
	if _, ok := r.as.Check(tok, r.res.URL); ok {
		t.Error("the access token still works at the server")
	}
	if _, err := r.m.Token(ctx, r.u, "user:alice"); !errors.As(err, new(*Needed)) {
		t.Errorf("after Revoke: %v; want consent needed", err)
	}
	if got, err := r.m.Revoke(ctx, "user:alice", ""); err != nil || len(got) != 0 {
		t.Errorf("a second Revoke = %+v, %v; want nothing", got, err)
	}
}

// TestConcurrentCallsShareOneRefresh: calls of one principal that find
// the token about to expire make one refresh between them.
func TestConcurrentCallsShareOneRefresh(t *testing.T) {
	r := setup(t, testoauth.Options{}, false, "plugkit")
	ctx := context.Background()
	if status, text := land(t, browser(t, needed(t, r, "user:alice").URL, "alice", testoauth.Users["alice"]).String()); status != http.StatusOK {
		t.Fatalf("callback: %d %s", status, text)
	}
	// Within the first token's last 30s (it lives an hour), and before
	// the refreshed one's: a call after the refresh is served it.
	later := time.Now().Add(time.Hour - 10*time.Second)
	r.m.now = func() time.Time { return later }
	toks := make([]string, 8)
	var wg sync.WaitGroup
	for i := range toks {
		wg.Go(func() {
			tok, err := r.m.Token(ctx, r.u, "user:alice")
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	var refreshes int
	for _, e := range r.as.Events() {
		if e.Kind == "refresh" {
			refreshes++
		}
	}
	if refreshes != 1 {
		t.Errorf("%d refreshes for 8 concurrent calls; want 1", refreshes)
	}
	for _, tok := range toks[1:] {
		if tok != toks[0] {
			t.Fatal("concurrent calls got different tokens")
		}
	}
}
