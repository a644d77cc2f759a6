package mcpserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/mcpserver"
)

// A sealed question is answered only by the principal it was asked of:
// another credential's retry with the same requestState is refused and
// runs nothing, and the right one's still works.
func TestStatelessStateBoundToPrincipal(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	keysFile := filepath.Join(t.TempDir(), "keys.hcl")
	ann, err := authn.NewKey(keysFile, "ann", "user", nil)
	if err != nil {
		t.Fatal(err)
	}
	bob, err := authn.NewKey(keysFile, "bob", "user", nil)
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
	f := newFixtureWith(t, 5*time.Second, mcpserver.Options{Authenticate: a.Require})
	endpoint := serveHTTP(t, f.srv)
	as := func(key string) *mcp.ClientSession {
		r := newReplicas(t, endpoint, endpoint)
		user := &elicitor{} // never called: the retries below are made by hand
		c := newClient(&mcp.ClientOptions{ElicitationHandler: user.handle, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: withKey{key, r}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		return cs
	}
	annS, bobS := as(ann), as(bob)
	args := json.RawMessage(`{"text":"notes"}`)
	first, err := annS.CallTool(ctx, &mcp.CallToolParams{Name: "delete", Arguments: args})
	if err != nil || first.RequestState == "" {
		t.Fatalf("ann's delete: %v, %+v; want input-required", err, first)
	}
	yes := mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	retry := &mcp.CallToolParams{Name: "delete", Arguments: args, RequestState: first.RequestState, InputResponses: yes}
	if _, err := bobS.CallTool(ctx, retry); err == nil || !strings.Contains(err.Error(), "requestState is not one this gateway issued") {
		t.Fatalf("bob's retry with ann's requestState: %v, want refused", err)
	}
	got, err := annS.CallTool(ctx, retry)
	if err != nil || got.IsError || text(got) != "deleted notes" {
		t.Fatalf("ann's retry: %v, %+v", err, got)
	}
	if codes := f.audit.codesOf(t, "delete", 2); len(codes) != 2 || countCode(codes, codeOK) != 1 {
		t.Fatalf("delete recorded %v, want ann's ABORTED then ok only", codes)
	}
}
