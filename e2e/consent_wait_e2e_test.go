package e2e

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testoauth"
	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
)

// urlAgent is who's MCP session that declares URL-mode elicitation: each
// elicitation it is sent goes on asked, and is answered with answer.
func (r *consentRig) urlAgent(t *testing.T, ctx context.Context, who, answer string) (*mcp.ClientSession, <-chan *mcp.ElicitParams) {
	t.Helper()
	asked := make(chan *mcp.ElicitParams, 4)
	client := mcp.NewClient(&mcp.Implementation{Name: who + "-url-agent", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked <- req.Params
			return &mcp.ElicitResult{Action: answer}, nil
		},
	})
	// A 2025-11-25 session: the host sends elicitation/create on it.
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: r.mcp,
		HTTPClient: &http.Client{Transport: bearer{r.apiKeys[who], http.DefaultTransport}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect as %s: %v", who, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, asked
}

// elicited is the URL-mode elicitation an agent was sent, checked.
func (r *consentRig) elicited(t *testing.T, ctx context.Context, asked <-chan *mcp.ElicitParams) *mcp.ElicitParams {
	t.Helper()
	select {
	case p := <-asked:
		if p.Mode != "url" || !strings.HasPrefix(p.URL, r.as.URL+"/authorize?") || p.ElicitationID == "" || !strings.Contains(p.Message, r.res.URL) {
			t.Fatalf("elicitation %+v; want mode url, the authorization URL, an id and the upstream named", p)
		}
		return p
	case <-ctx.Done():
		t.Fatalf("no elicitation came\n%s", r.running.stderr)
	}
	return nil
}

// TestUserConsentWaitsForTheBrowser: an agent that supports URL-mode
// elicitation is sent the authorization URL during its call, which waits;
// alice consents in chromium, and the same call goes on and reaches the
// upstream with her token. An agent that declines, and one that cannot be
// asked, get the DENIED result naming the URL, as before. host call asks
// at the terminal, waits, and prints the upstream's answer.
func TestUserConsentWaitsForTheBrowser(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	as := testoauth.StartAuthServer(t, testoauth.Options{Clients: map[string][]string{"plugkit": nil}})
	res := testoauth.StartResource(t, as, false)
	r := startConsentHost(t, ctx, as, res, consentOpts{})

	alice, asked := r.urlAgent(t, ctx, "alice", "accept")
	done := mcpCallAsync(ctx, alice, "tracker_whoami", `{}`)
	p := r.elicited(t, ctx, asked)
	t.Logf("alice's agent was asked: %s\n  url: %s", p.Message, p.URL)
	select {
	case res := <-done:
		t.Fatalf("alice's call ended before she consented: %q", toolText(res))
	default:
	}
	if n := len(res.Calls()); n != 0 {
		t.Fatalf("%d calls reached the upstream before alice consented", n)
	}
	if title, _ := consentInBrowser(t, ctx, p.URL, "alice"); title != "Access allowed" {
		t.Fatalf("consent: %q", title)
	}
	var out *mcp.CallToolResult
	select {
	case out = <-done:
	case <-ctx.Done():
		t.Fatalf("alice's call did not go on after she consented\n%s", r.running.stderr)
	}
	if text := toolText(out); out.IsError || !strings.Contains(text, "you are alice") {
		t.Fatalf("alice's waiting call after consent: isError %v %q\n%s", out.IsError, text, r.running.stderr)
	}
	if calls := res.Calls(); len(calls) != 1 || calls[0].User != "alice" || !strings.HasPrefix(calls[0].Token, "at-alice-") {
		t.Fatalf("upstream calls %+v; want the waiting call with alice's token", calls)
	}
	t.Logf("alice's waiting call went on: %s", toolText(out))
	var logged string
	for _, line := range strings.Split(r.running.stderr.String(), "\n") {
		if strings.Contains(line, "consent given") {
			logged = line
		}
	}
	t.Logf("the host's log: %s", logged)
	if !strings.Contains(logged, "principal=user:alice") || !strings.Contains(logged, "plugin=tracker") || !strings.Contains(logged, "call=") {
		t.Errorf("the host did not log alice's consent with the call that asked: %q", logged)
	}

	// Bob's agent declines: DENIED with the URL, nothing waits.
	bob, bobAsked := r.urlAgent(t, ctx, "bob", "decline")
	got := mcpCall(t, ctx, bob, "tracker_whoami", `{}`)
	bp := r.elicited(t, ctx, bobAsked)
	if m := consentURL.FindStringSubmatch(toolText(got)); !got.IsError || !strings.Contains(toolText(got), "DENIED") || m == nil || m[1] != bp.URL {
		t.Errorf("bob's call, declined: %q; want DENIED naming the URL he was sent", toolText(got))
	}
	// An agent without URL elicitation: as before.
	r.mustConsent(t, ctx, "bob")

	// host call asks at the terminal and waits for the browser.
	cmd := exec.CommandContext(ctx, bins.Path("host"), "call", "tracker_whoami", "--answer-from-stdin", "-c", r.config)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var prompt strings.Builder
	authURL := ""
	sc := bufio.NewScanner(stderr)
	for authURL == "" && sc.Scan() {
		line := sc.Text()
		prompt.WriteString(line + "\n")
		if u, ok := strings.CutPrefix(strings.TrimSpace(line), "url: "); ok {
			authURL = u
		}
	}
	if authURL == "" {
		cmd.Wait()
		t.Fatalf("host call printed no URL:\n%s", prompt.String())
	}
	// Answered before the browser: the call waits for the consent.
	if _, err := io.WriteString(stdin, "y\n"); err != nil {
		t.Fatal(err)
	}
	rest := make(chan string, 1)
	go func() { b, _ := io.ReadAll(stderr); rest <- string(b) }()
	if title, _ := consentInBrowser(t, ctx, authURL, "alice"); title != "Access allowed" {
		t.Fatalf("consent for host call: %q", title)
	}
	err = cmd.Wait()
	prompt.WriteString(<-rest)
	t.Logf("host call tracker_whoami --answer-from-stdin:\n%s%s", prompt.String(), stdout.String())
	if err != nil || !strings.Contains(stdout.String(), "you are alice") {
		t.Fatalf("host call after consenting: %v %q\n%s", err, stdout.String(), prompt.String())
	}
}

// TestUserConsentPendingAcrossReplicas: two replicas share Redis, and the
// browsers' callback reaches the second (both name its listener as their
// url, as a load balancer in front of both would): alice's call through
// the first waits, her browser's answer lands on the second, and her call
// on the first goes on with her token.
func TestUserConsentPendingAcrossReplicas(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	redis := testredis.Start(t)
	as := testoauth.StartAuthServer(t, testoauth.Options{Clients: map[string][]string{"plugkit": nil}})
	res := testoauth.StartResource(t, as, false)
	keyFile := newVaultKey(t, t.TempDir())
	b := startConsentHost(t, ctx, as, res, consentOpts{keyFile: keyFile, store: redis.URL()})
	a := startConsentHost(t, ctx, as, res, consentOpts{keyFile: keyFile, store: redis.URL(), url: b.callback})

	alice, asked := a.urlAgent(t, ctx, "alice", "accept")
	done := mcpCallAsync(ctx, alice, "tracker_whoami", `{}`)
	p := a.elicited(t, ctx, asked)
	title, landed := consentInBrowser(t, ctx, p.URL, "alice")
	if title != "Access allowed" || !strings.HasPrefix(landed, b.callback+"/oauth/callback?") {
		t.Fatalf("the browser ended on %s, titled %q; want the second replica's callback", landed, title)
	}
	var out *mcp.CallToolResult
	select {
	case out = <-done:
	case <-ctx.Done():
		t.Fatalf("alice's call on the first replica did not go on\n%s", a.running.stderr)
	}
	if text := toolText(out); out.IsError || !strings.Contains(text, "you are alice") {
		t.Fatalf("alice's call on the first replica: isError %v %q\n%s", out.IsError, text, a.running.stderr)
	}
	if calls := res.Calls(); len(calls) != 1 || calls[0].User != "alice" {
		t.Fatalf("upstream calls %+v; want alice's waiting call", calls)
	}
	// The state is spent on both replicas.
	resp, err := http.Get(landed)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest {
		t.Errorf("the browser's answer again: %s; want 400", resp.Status)
	}
}
