package main

import (
	"context"
	"encoding/json"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestElicitTiedToTheSoleCall: a server's question goes to the host for the
// one call in flight, and is declined, asking nobody, when there are none or
// several (it could be any of their callers' users).
func TestElicitTiedToTheSoleCall(t *testing.T) {
	b := &bridge{log: hclog.NewNullLogger(), set: &settings{command: []string{"srv"}}}
	var mu sync.Mutex
	var asked []string
	b.setAsk(func(_ context.Context, callID string, params json.RawMessage) (json.RawMessage, error) {
		mu.Lock()
		asked = append(asked, callID)
		mu.Unlock()
		return json.RawMessage(`{"action":"accept","content":{"name":"Ann"}}`), nil
	})
	req := &mcp.ElicitRequest{Params: &mcp.ElicitParams{Mode: "form", Message: "Name?"}}
	answer := func() string {
		r, err := b.elicit(t.Context(), req)
		if err != nil {
			t.Fatal(err)
		}
		return r.Action
	}

	if a := answer(); a != "decline" {
		t.Errorf("no call in flight: %s, want decline", a)
	}
	endOne := b.inFlight("c-1")
	if a := answer(); a != "accept" {
		t.Errorf("one call in flight: %s, want the caller's accept", a)
	}
	endTwo := b.inFlight("c-2")
	if a := answer(); a != "decline" {
		t.Errorf("two calls in flight: %s, want decline", a)
	}
	// A question asked under a call's own context (a 2026-07-28 server's
	// input-required result) is that call's, however many are in flight.
	if r, err := b.elicit(withCallID(t.Context(), "c-2"), req); err != nil || r.Action != "accept" {
		t.Errorf("under c-2's context: %+v %v, want accept", r, err)
	}
	endOne()
	if a := answer(); a != "accept" {
		t.Errorf("c-2 alone: %s, want accept", a)
	}
	endTwo()
	if a := answer(); a != "decline" {
		t.Errorf("after both: %s, want decline", a)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(asked) != 3 || asked[0] != "c-1" || asked[1] != "c-2" || asked[2] != "c-2" {
		t.Errorf("asked for calls %v, want [c-1 c-2 c-2]", asked)
	}
}
