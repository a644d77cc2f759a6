package e2e

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testoauth"
	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
)

// consentRig is a running host bridging a protected upstream with
// user_consent, and the principals' MCP sessions.
type consentRig struct {
	dir, config, vault, callback string
	// mcp is the MCP endpoint; apiKeys the principals' keys.
	mcp      string
	apiKeys  map[string]string
	as       *testoauth.AuthServer
	res      *testoauth.Resource
	running  *running
	sessions map[string]*mcp.ClientSession
}

// startConsentHost starts the host with mcp_auth keys for alice and bob
// (users), a user_consent block and the bridge in front of res.
func startConsentHost(t *testing.T, ctx context.Context, as *testoauth.AuthServer, res *testoauth.Resource, o consentOpts) *consentRig {
	t.Helper()
	r := &consentRig{dir: t.TempDir(), as: as, res: res, sessions: map[string]*mcp.ClientSession{}}
	bridge := bins.Build(t, "plugins/mcp", module+"plugins/mcp")
	keysFile := filepath.Join(r.dir, "keys.hcl")
	apiKeys := map[string]string{}
	for _, who := range []string{"alice", "bob"} {
		out, stderr, code := cli(t, "key", "add", who, "--kind", "user", "-f", keysFile)
		if code != 0 {
			t.Fatalf("host key add %s: %d %s", who, code, stderr)
		}
		apiKeys[who] = strings.TrimSpace(out)
	}
	keyFile := o.keyFile
	if keyFile == "" {
		keyFile = newVaultKey(t, r.dir)
	}
	r.vault = filepath.Join(r.dir, "tokens.vault")
	addr, cb := freeLoopbackAddr(t), freeLoopbackAddr(t)
	r.callback = "http://" + cb
	r.mcp, r.apiKeys = "http://"+addr+"/mcp", apiKeys
	urlLine := ""
	if o.url != "" {
		urlLine = fmt.Sprintf("    url      = %q\n", o.url)
	}
	store := fmt.Sprintf("    vault    = %q\n", r.vault)
	if o.store != "" {
		store = fmt.Sprintf("    store    = %q\n", o.store)
	}
	r.config = deploymentFileWith(t, r.dir, deploymentTweaks{
		host: fmt.Sprintf("  mcp = %q\n  mcp_auth {\n    keys = %q\n  }\n  user_consent {\n    listen   = %q\n%s    key_file = %q\n%s  }\n", addr, keysFile, cb, urlLine, keyFile, store),
		more: fmt.Sprintf(`
plugin "tracker" {
  path = %q
  config {
    url         = %q
    trust_hints = true
    auth {
      user_consent {
        client_id = "plugkit"
        scope     = "issues:read"
      }
    }
  }
  sandbox {
    network = [%s]
  }
}
`, bridge, res.URL, strings.TrimSuffix(res.URL[strings.LastIndex(res.URL, ":")+1:], "/mcp")),
	})
	r.running = startHost(t, r.config, len(shippedPlugins)+1)
	for who, k := range apiKeys {
		client := mcp.NewClient(&mcp.Implementation{Name: who + "-agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{k, http.DefaultTransport}}}, nil)
		if err != nil {
			t.Fatalf("connect as %s: %v\n%s", who, err, r.running.stderr)
		}
		t.Cleanup(func() { cs.Close() })
		r.sessions[who] = cs
	}
	wait := "tracker_whoami"
	if o.waitFor != "" {
		wait = o.waitFor
	}
	waitTools(t, ctx, r.sessions["alice"], wait)
	return r
}

// consentOpts vary startConsentHost: a key file of the test's (replicas
// share one), a Redis store instead of the vault file, the callback's URL
// as browsers reach it (another replica's, as a load balancer would send
// them there).
type consentOpts struct {
	keyFile, store, url string
	// waitFor is the tool the host is ready with (tracker_whoami).
	waitFor string
}

// newVaultKey writes a vault key file into dir.
func newVaultKey(t *testing.T, dir string) string {
	t.Helper()
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "vault.key")
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return keyFile
}

var consentURL = regexp.MustCompile(`open (\S+) in a browser`)

// mustConsent calls whoami as who and expects it DENIED with an
// authorization URL, which it returns.
func (r *consentRig) mustConsent(t *testing.T, ctx context.Context, who string) string {
	t.Helper()
	res := mcpCall(t, ctx, r.sessions[who], "tracker_whoami", `{}`)
	text := toolText(res)
	m := consentURL.FindStringSubmatch(text)
	if !res.IsError || !strings.Contains(text, "DENIED") || m == nil || !strings.HasPrefix(m[1], r.as.URL+"/authorize?") {
		t.Fatalf("%s's call without consent: isError %v %q; want DENIED with the authorization URL\n%s", who, res.IsError, text, r.running.stderr)
	}
	return m[1]
}

// whoami calls whoami as who and expects it to reach the upstream as who.
func (r *consentRig) whoami(t *testing.T, ctx context.Context, who string) {
	t.Helper()
	res := mcpCall(t, ctx, r.sessions[who], "tracker_whoami", `{}`)
	if text := toolText(res); res.IsError || !strings.Contains(text, "you are "+who) {
		t.Fatalf("%s's call after consenting: isError %v %q\n%s", who, res.IsError, text, r.running.stderr)
	}
}

// consentInBrowser opens authURL in headless chromium, signs in as user
// and allows; it returns the title of the page the browser ends on (the
// host's callback page) and its address.
func consentInBrowser(t *testing.T, ctx context.Context, authURL, user string) (title, at string) {
	t.Helper()
	chromium := testenv.LookPath(t, "chromium")
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.NoSandbox,
		chromedp.UserDataDir(t.TempDir()))
	actx, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer cancelAlloc()
	bctx, cancelBrowser := chromedp.NewContext(actx)
	defer cancelBrowser()
	err := chromedp.Do(bctx,
		chromedp.Navigate(authURL),
		chromedp.WaitVisible("#user"),
		chromedp.SendKeys("#user", user),
		chromedp.SendKeys("#password", testoauth.Users[user]),
		chromedp.Click("#allow"),
		chromedp.WaitVisible("#title"),
	)
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	title, err = chromedp.Run(bctx, chromedp.Text("#title"))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	at, err = chromedp.Run(bctx, chromedp.Location())
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	detail, err := chromedp.Run(bctx, chromedp.Text("#detail"))
	if err != nil {
		t.Fatalf("browser: %v", err)
	}
	t.Logf("browser, after %s consented: %s: %s", user, title, detail)
	return title, at
}

// TestUserConsentThroughTheGateway runs the real host, bridge and a real
// browser against a protected upstream: alice's first call is DENIED with
// her authorization URL, bob's with his own; alice consents in chromium;
// her next call reaches the upstream with her token, bob's is still
// denied; the token is refreshed without a browser once it expires; a
// forged state and a replayed callback are refused; no token is in the
// vault file, the host's log or the audit log.
func TestUserConsentThroughTheGateway(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	as := testoauth.StartAuthServer(t, testoauth.Options{Clients: map[string][]string{"plugkit": nil}})
	res := testoauth.StartResource(t, as, false)
	r := startConsentHost(t, ctx, as, res, consentOpts{})

	aliceURL := r.mustConsent(t, ctx, "alice")
	bobURL := r.mustConsent(t, ctx, "bob")
	if aliceURL == bobURL {
		t.Fatal("bob got alice's authorization URL")
	}
	// host call, as the local user, prints the URL too.
	out, _, code := cli(t, "call", "tracker_whoami", "-c", r.config)
	t.Logf("host call tracker_whoami: %s", out)
	if m := consentURL.FindStringSubmatch(out); code != exitFailed || !strings.Contains(out, "DENIED") || m == nil || m[1] == aliceURL || !strings.HasPrefix(m[1], as.URL+"/authorize?") {
		t.Errorf("host call without consent: exit %d %q; want DENIED with the local user's own URL", code, out)
	}
	if n := len(res.Calls()); n != 0 {
		t.Fatalf("%d calls reached the upstream before any consent", n)
	}

	// Tokens live 3s from now on: the second call below needs a refresh.
	as.SetTTL(3 * time.Second)
	title, landed := consentInBrowser(t, ctx, aliceURL, "alice")
	if title != "Access allowed" || !strings.HasPrefix(landed, r.callback+"/oauth/callback?") {
		t.Fatalf("the browser ended on %s, titled %q", landed, title)
	}
	consented := time.Now()
	r.whoami(t, ctx, "alice")
	calls := res.Calls()
	if len(calls) != 1 || calls[0].User != "alice" || !strings.HasPrefix(calls[0].Token, "at-alice-") {
		t.Fatalf("upstream calls %+v; want one with alice's token", calls)
	}
	if again := r.mustConsent(t, ctx, "bob"); again == bobURL {
		t.Errorf("bob's second call got his first call's authorization URL; each call's state is its own")
	}

	// Past the token's life: the host refreshes it, no browser.
	time.Sleep(time.Until(consented.Add(3 * time.Second)))
	r.whoami(t, ctx, "alice")
	calls = res.Calls()
	if len(calls) != 2 || calls[1].Token == calls[0].Token || calls[1].User != "alice" {
		t.Fatalf("upstream calls after expiry %+v; want a second one with a new token of alice's", calls)
	}
	var refreshed bool
	for _, e := range as.Events() {
		refreshed = refreshed || (e.Kind == "refresh" && e.User == "alice")
	}
	if !refreshed {
		t.Error("the authorization server saw no refresh")
	}

	// The callback refuses a forged state and the same answer twice.
	for name, u := range map[string]string{"forged state": r.callback + "/oauth/callback?state=forged&code=x",
		"no state": r.callback + "/oauth/callback?code=x", "the browser's answer again": landed} {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusBadRequest {
			t.Errorf("%s: %s; want 400", name, resp.Status)
		}
	}

	// host tokens list shows alice's consent, never her token; revoke
	// makes her next call ask again, with a new URL.
	out, stderr, code := cli(t, "tokens", "list", "-c", r.config)
	// (the local user never consented: only alice is listed)
	t.Logf("host tokens list:\n%s", out)
	if code != 0 || !strings.Contains(out, "user:alice") || !strings.Contains(out, "tracker") || !strings.Contains(out, res.URL) || strings.Contains(out, "bob") {
		t.Errorf("host tokens list: exit %d %q %s", code, out, stderr)
	}
	out, stderr, code = cli(t, "tokens", "revoke", "alice", "-c", r.config)
	t.Logf("host tokens revoke alice:\n%s", out)
	if code != 0 || !strings.Contains(out, "revoked user:alice's token for tracker") || !strings.Contains(out, "at its authorization server: revoked") {
		t.Errorf("host tokens revoke alice: exit %d %q %s", code, out, stderr)
	}
	if _, _, code := cli(t, "tokens", "revoke", "alice", "-c", r.config); code != exitFailed {
		t.Errorf("revoking again: exit %d; want %d (nothing kept)", code, exitFailed)
	}
	secondURL := r.mustConsent(t, ctx, "alice")
	if secondURL == aliceURL {
		t.Error("after revoke, alice got her spent URL again")
	}
	if n := len(res.Calls()); n != 2 {
		t.Errorf("%d upstream calls; the call after revoke reached it", n)
	}

	// Alice consents again; then the authorization server revokes her
	// token behind the host's back: the upstream's 401 drops it, and her
	// call is DENIED with a new URL rather than failing for good.
	as.SetTTL(time.Hour)
	if title, _ := consentInBrowser(t, ctx, secondURL, "alice"); title != "Access allowed" {
		t.Fatalf("second consent: %q", title)
	}
	r.whoami(t, ctx, "alice")
	calls = res.Calls()
	as.Revoke(calls[len(calls)-1].Token)
	res401 := mcpCall(t, ctx, r.sessions["alice"], "tracker_whoami", `{}`)
	text := toolText(res401)
	t.Logf("alice's call with a token the upstream refuses: %s", text)
	if m := consentURL.FindStringSubmatch(text); !res401.IsError || !strings.Contains(text, "DENIED") || !strings.Contains(text, "HTTP 401") || m == nil || m[1] == secondURL {
		t.Errorf("a call whose token the upstream refused: isError %v %q; want DENIED naming the 401 and a new URL", res401.IsError, text)
	}
	if out, _, _ := cli(t, "tokens", "list", "alice", "-c", r.config); !strings.Contains(out, "no upstream tokens kept") {
		t.Errorf("after the upstream's 401, host tokens list alice: %q; want her token dropped", out)
	}
	// One user's refused token does not cut the bridge's session: the
	// plugin did not restart.
	out, _, _ = cli(t, "status", "--json", "-c", r.config)
	var st admin.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	var seen bool
	for _, p := range st.Plugins {
		if p.Name == "tracker" {
			seen = true
			if p.Restarts != 0 || p.State != "ACTIVE" {
				t.Errorf("after one user's 401 the bridge is %s after %d restarts", p.State, p.Restarts)
			}
		}
	}
	if !seen {
		t.Errorf("host status lists no tracker: %s", out)
	}

	// No token in the clear anywhere the host writes.
	var tokens []string
	for _, e := range as.Events() {
		if e.Token != "" {
			tokens = append(tokens, e.Token)
		}
	}
	vaultRaw, err := os.ReadFile(r.vault)
	if err != nil {
		t.Fatal(err)
	}
	audit, _ := os.ReadFile(filepath.Join(r.dir, "run", "audit", "audit.log"))
	if len(audit) == 0 {
		t.Fatal("no audit log")
	}
	for where, text := range map[string]string{"the vault file": string(vaultRaw), "the host's log": r.running.stderr.String(), "the audit log": string(audit)} {
		for _, tok := range tokens {
			if strings.Contains(text, tok) {
				t.Errorf("%s holds a token", where)
			}
		}
		if strings.Contains(text, "rt-alice") || strings.Contains(text, "at-alice") {
			t.Errorf("%s holds a token of alice's", where)
		}
	}
}

// TestUserConsentSharedByReplicas: two hosts with one Redis store and one
// vault key serve the same principals; alice consents through the first
// replica's URL and callback, and her call through the second reaches the
// upstream with her token; Redis holds no token in the clear.
func TestUserConsentSharedByReplicas(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	redis := testredis.Start(t)
	as := testoauth.StartAuthServer(t, testoauth.Options{Clients: map[string][]string{"plugkit": nil}})
	res := testoauth.StartResource(t, as, false)
	keyFile := newVaultKey(t, t.TempDir())
	a := startConsentHost(t, ctx, as, res, consentOpts{keyFile: keyFile, store: redis.URL()})
	b := startConsentHost(t, ctx, as, res, consentOpts{keyFile: keyFile, store: redis.URL()})

	b.mustConsent(t, ctx, "alice")
	url := a.mustConsent(t, ctx, "alice")
	if title, landed := consentInBrowser(t, ctx, url, "alice"); title != "Access allowed" || !strings.HasPrefix(landed, a.callback) {
		t.Fatalf("consent through the first replica ended on %s, titled %q", landed, title)
	}
	b.whoami(t, ctx, "alice")
	calls := res.Calls()
	if len(calls) != 1 || calls[0].User != "alice" {
		t.Fatalf("upstream calls %+v; want alice's call through the second replica", calls)
	}
	a.whoami(t, ctx, "alice")
	if calls := res.Calls(); len(calls) != 2 || calls[1].Token != calls[0].Token {
		t.Errorf("the two replicas sent different tokens of alice's: %+v", calls)
	}
	b.mustConsent(t, ctx, "bob")
	if out, _, code := cli(t, "tokens", "list", "-c", b.config); code != 0 || !strings.Contains(out, "user:alice") {
		t.Errorf("host tokens list on the second replica: exit %d %q", code, out)
	}
	dump, err := exec.CommandContext(ctx, testenv.LookPath(t, "redis-cli"), "-u", redis.URL(), "--no-raw", "HGETALL", "plugkit:vault").CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli: %v %s", err, dump)
	}
	if !strings.Contains(string(dump), "user:alice") || strings.Contains(string(dump), calls[0].Token) || strings.Contains(string(dump), "at-alice") || strings.Contains(string(dump), "rt-alice") {
		t.Errorf("Redis holds alice's record in the clear, or none:\n%s", dump)
	}
	// Revoked on one replica: the other asks again.
	if _, _, code := cli(t, "tokens", "revoke", "alice", "-c", a.config); code != 0 {
		t.Fatalf("host tokens revoke alice on the first replica: exit %d", code)
	}
	b.mustConsent(t, ctx, "alice")
}
