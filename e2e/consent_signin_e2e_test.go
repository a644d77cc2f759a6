package e2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/internal/testkit/testoauth"
)

func toolNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		if strings.HasPrefix(tool.Name, "tracker_") {
			names = append(names, tool.Name)
		}
	}
	return names
}

// TestUserConsentUpstreamListsOnlyWithAToken: an upstream that refuses
// even initialize and tools/list without a token is bridged with one
// tool, tracker_sign_in; alice calls it, is asked for her consent (URL
// elicitation) and consents in chromium; the bridge lists the upstream's
// tools with her token and they replace the sign-in tool. Bob's call of
// such a tool still asks for his own consent, and alice's reaches the
// upstream with her token.
func TestUserConsentUpstreamListsOnlyWithAToken(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	as := testoauth.StartAuthServer(t, testoauth.Options{Clients: map[string][]string{"plugkit": nil}})
	res := testoauth.StartResource(t, as, true)
	r := startConsentHost(t, ctx, as, res, consentOpts{waitFor: "tracker_sign_in"})
	if names := toolNames(t, ctx, r.sessions["bob"]); !slices.Equal(names, []string{"tracker_sign_in"}) {
		t.Fatalf("before any sign-in the bridge lists %v; want tracker_sign_in alone", names)
	}

	alice, asked := r.urlAgent(t, ctx, "alice", "accept")
	done := mcpCallAsync(ctx, alice, "tracker_sign_in", `{}`)
	p := r.elicited(t, ctx, asked)
	if title, _ := consentInBrowser(t, ctx, p.URL, "alice"); title != "Access allowed" {
		t.Fatalf("consent: %q", title)
	}
	var out *mcp.CallToolResult
	select {
	case out = <-done:
	case <-ctx.Done():
		t.Fatalf("the sign-in did not end\n%s", r.running.stderr)
	}
	t.Logf("tracker_sign_in as alice: %s", toolText(out))
	if out.IsError || !strings.Contains(toolText(out), "signed in") {
		t.Fatalf("tracker_sign_in: isError %v %q\n%s", out.IsError, toolText(out), r.running.stderr)
	}
	// (alice's is a 2025-11-25 session: no cached list)
	waitTools(t, ctx, alice, "tracker_whoami")
	testkit.WaitFor(t, 30*time.Second, "tracker_sign_in to be no longer listed after the sign-in", func() bool {
		return !slices.Contains(toolNames(t, ctx, alice), "tracker_sign_in")
	})

	r.mustConsent(t, ctx, "bob")
	got := mcpCall(t, ctx, alice, "tracker_whoami", `{}`)
	if text := toolText(got); got.IsError || !strings.Contains(text, "you are alice") {
		t.Fatalf("alice's call after the sign-in: %q\n%s", text, r.running.stderr)
	}
	if calls := res.Calls(); len(calls) != 1 || calls[0].User != "alice" {
		t.Fatalf("upstream calls %+v; want alice's one", calls)
	}
}
