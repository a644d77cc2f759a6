package tokenexchange

import (
	"context"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/plugkit-go/plugkit/internal/testkit/testissuer"
)

// setup is a broker against a test issuer's token endpoint, and an
// upstream of mode exchanging there.
func setup(t *testing.T, mode Mode) (*testissuer.Issuer, *Broker, *Upstream, map[Outcome]int) {
	t.Helper()
	iss := testissuer.Start(t)
	tr := &http.Transport{}
	t.Cleanup(tr.CloseIdleConnections)
	b := New(&http.Client{Transport: tr, Timeout: RequestTimeout})
	var mu sync.Mutex
	counts := map[Outcome]int{}
	b.OnOutcome = func(plugin string, o Outcome) {
		mu.Lock()
		counts[o]++
		mu.Unlock()
	}
	u := &Upstream{Plugin: "gh", URL: "https://upstream.example/mcp", Mode: mode, TokenURL: iss.TokenURL,
		Audience: "https://upstream.example", Scope: "repo:read", ClientID: iss.ClientID, ClientSecret: iss.ClientSecret}
	return iss, b, u, counts
}

func audienceOf(t *testing.T, tok string) (sub, aud string) {
	t.Helper()
	claims := jwt.MapClaims{}
	if _, _, err := jwt.NewParser().ParseUnverified(tok, claims); err != nil {
		t.Fatal(err)
	}
	sub, _ = claims.GetSubject()
	auds, _ := claims.GetAudience()
	return sub, strings.Join(auds, ",")
}

func TestExchangePerPrincipalAndCache(t *testing.T) {
	iss, b, u, counts := setup(t, Exchange)
	alice := WithSubjectToken(context.Background(), iss.Token(t, jwt.MapClaims{"sub": "alice", "aud": "plugkit"}))
	bob := WithSubjectToken(context.Background(), iss.Token(t, jwt.MapClaims{"sub": "bob", "aud": "plugkit"}))

	ta, err := b.Token(alice, u, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	tb, err := b.Token(bob, u, "user:bob")
	if err != nil {
		t.Fatal(err)
	}
	if ta == tb {
		t.Fatal("two principals got the same token")
	}
	for tok, want := range map[string]string{ta: "alice", tb: "bob"} {
		if sub, aud := audienceOf(t, tok); sub != want || aud != u.Audience {
			t.Errorf("token for %s has sub %q aud %q; want aud %q", want, sub, aud, u.Audience)
		}
	}
	again, err := b.Token(alice, u, "user:alice")
	if err != nil || again != ta {
		t.Fatalf("repeat call: %v, same token %v", err, again == ta)
	}
	if n := len(iss.Grants()); n != 2 {
		t.Errorf("token endpoint issued %d tokens; want 2 (the repeat from the cache)", n)
	}
	if counts[Exchanged] != 2 || counts[Cached] != 1 || counts[Failed] != 0 {
		t.Errorf("outcomes %v; want 2 exchanged, 1 cached", counts)
	}
}

func TestConcurrentCallsShareOneExchange(t *testing.T) {
	iss, b, u, _ := setup(t, Exchange)
	ctx := WithSubjectToken(context.Background(), iss.Token(t, jwt.MapClaims{"sub": "alice"}))
	var wg sync.WaitGroup
	toks := make([]string, 8)
	for i := range toks {
		wg.Go(func() {
			tok, err := b.Token(ctx, u, "user:alice")
			if err != nil {
				t.Error(err)
			}
			toks[i] = tok
		})
	}
	wg.Wait()
	if n := len(iss.Grants()); n != 1 {
		t.Errorf("token endpoint issued %d tokens to 8 concurrent calls; want 1", n)
	}
	for _, tok := range toks[1:] {
		if tok != toks[0] {
			t.Fatal("concurrent calls got different tokens")
		}
	}
}

func TestFailuresNameTheUpstream(t *testing.T) {
	iss, b, u, counts := setup(t, Exchange)
	expired := WithSubjectToken(context.Background(), iss.Token(t, jwt.MapClaims{"sub": "alice", "exp": time.Now().Add(-time.Minute).Unix()}))
	for name, c := range map[string]struct {
		ctx  context.Context
		u    *Upstream
		want string
	}{
		"expired subject": {expired, u, "invalid_grant"},
		"no subject":      {context.Background(), u, "carries no OAuth access token"},
		"wrong client":    {expired, &Upstream{Plugin: "gh", URL: u.URL, Mode: Exchange, TokenURL: u.TokenURL, Audience: u.Audience, ClientID: "x", ClientSecret: "y"}, "invalid_client"},
	} {
		_, err := b.Token(c.ctx, c.u, "user:alice")
		if err == nil || !strings.Contains(err.Error(), u.URL) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one naming %s and %q", name, err, u.URL, c.want)
		}
	}
	if counts[Failed] != 3 {
		t.Errorf("outcomes %v; want 3 failed", counts)
	}
	if len(iss.Grants()) != 0 {
		t.Error("the token endpoint issued a token for a failed exchange")
	}
}

func TestClientCredentials(t *testing.T) {
	iss, b, u, _ := setup(t, ClientCredentials)
	tok, err := b.Token(context.Background(), u, "user:alice")
	if err != nil {
		t.Fatal(err)
	}
	if sub, aud := audienceOf(t, tok); sub != iss.ClientID || aud != u.Audience {
		t.Errorf("sub %q aud %q; want the client %q for %q", sub, aud, iss.ClientID, u.Audience)
	}
	if again, _ := b.Token(context.Background(), u, "user:bob"); again != tok || len(iss.Grants()) != 1 {
		t.Error("client credentials are not shared and cached across principals")
	}
}

func TestSubjectTokenDoesNotPrint(t *testing.T) {
	ctx := WithSubjectToken(context.Background(), "very-secret")
	if s := ctx.Value(subjectKey{}); strings.Contains(strings.Join([]string{fmtV(s)}, ""), "very-secret") {
		t.Error("the subject token prints")
	}
}

// TestCacheKeyedByPluginAndSecret: a token cached for one plugin is not
// served to another with the same settings, and one with the same settings
// but a wrong client secret gets the token endpoint's refusal, not the
// cached token, for both modes.
func TestCacheKeyedByPluginAndSecret(t *testing.T) {
	for _, mode := range []Mode{ClientCredentials, Exchange} {
		t.Run(string(mode), func(t *testing.T) {
			iss, b, u, counts := setup(t, mode)
			ctx := WithSubjectToken(context.Background(), iss.Token(t, jwt.MapClaims{"sub": "alice"}))
			tok, err := b.Token(ctx, u, "user:alice")
			if err != nil {
				t.Fatal(err)
			}
			wrong := *u
			wrong.Plugin, wrong.ClientSecret = "forger", "wrong"
			if got, err := b.Token(ctx, &wrong, "user:alice"); err == nil || !strings.Contains(err.Error(), "invalid_client") {
				t.Errorf("a wrong client secret: token %v, error %v; want invalid_client", got == tok, err)
			}
			sameSecretWrong := *u
			sameSecretWrong.ClientSecret = "wrong"
			if _, err := b.Token(ctx, &sameSecretWrong, "user:alice"); err == nil {
				t.Error("the same plugin with a wrong client secret got the cached token")
			}
			other := *u
			other.Plugin = "gh2"
			// (Its token may equal the first one, byte for byte: the test
			// issuer signs the same claims in the same second alike; the
			// grants below count the exchanges.)
			if _, err := b.Token(ctx, &other, "user:alice"); err != nil {
				t.Errorf("another plugin with the right secret: %v", err)
			}
			if again, err := b.Token(ctx, u, "user:alice"); err != nil || again != tok {
				t.Errorf("the first plugin's repeat: error %v, cached %v", err, again == tok)
			}
			if n := len(iss.Grants()); n != 2 {
				t.Errorf("token endpoint issued %d tokens; want 2 (one per plugin with the right secret)", n)
			}
			if counts[Failed] != 2 || counts[Cached] != 1 {
				t.Errorf("outcomes %v; want 2 failed, 1 cached", counts)
			}
		})
	}
}
