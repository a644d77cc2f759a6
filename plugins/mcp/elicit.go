package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's elicitation/create during a call goes to the client that made
// the call, through the host (sdk.Context.Elicit), and the client's answer
// comes back. A 2026-07-28 server asks in the call's own result
// (input-required), which the SDK answers under the call's context: that
// ties it to its call exactly. The request of an older server does not say
// which call it belongs to: it is tied to the call only when exactly one
// call to the server is in flight, and declined otherwise (asking the wrong
// client would hand one caller's question to another).

// callIDKey carries the id of the call a tools/call is made for.
type callIDKey struct{}

// withCallID marks ctx as the context of the call callID.
func withCallID(ctx context.Context, callID string) context.Context {
	return context.WithValue(ctx, callIDKey{}, callID)
}

// askFunc is the host's Elicit: a question for the call callID.
type askFunc func(ctx context.Context, callID string, params json.RawMessage) (json.RawMessage, error)

// declinedResult is the answer when the question cannot be put to anyone.
func declinedResult() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }

// setAsk sets how the bridge asks the host (once Apply has the host).
func (b *bridge) setAsk(ask askFunc) {
	b.mu.Lock()
	b.ask = ask
	b.mu.Unlock()
}

// inFlight records the call callID as in flight until the returned func is
// called.
func (b *bridge) inFlight(callID string) func() {
	b.mu.Lock()
	if b.live == nil {
		b.live = map[string]int{}
	}
	b.live[callID]++
	b.mu.Unlock()
	return func() {
		b.mu.Lock()
		if b.live[callID]--; b.live[callID] <= 0 {
			delete(b.live, callID)
		}
		b.mu.Unlock()
	}
}

// soleCall is the one call in flight, "" when there are none or several.
func (b *bridge) soleCall() (string, askFunc) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.live) != 1 {
		return "", b.ask
	}
	for id := range b.live {
		return id, b.ask
	}
	return "", b.ask
}

// elicit is the session's ElicitationHandler.
func (b *bridge) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	callID, ask := b.soleCall()
	if id, ok := ctx.Value(callIDKey{}).(string); ok {
		callID = id
	}
	if callID == "" || ask == nil {
		b.log.Info("elicitation from the MCP server declined: no single call in flight to tie it to", "server", b.set.describe())
		return declinedResult(), nil
	}
	params, err := json.Marshal(req.Params)
	if err != nil {
		return nil, fmt.Errorf("encode the elicitation: %w", err)
	}
	out, err := ask(ctx, callID, params)
	if err != nil {
		return nil, fmt.Errorf("ask the caller of call %s: %w", callID, err)
	}
	var r mcp.ElicitResult
	if err := json.Unmarshal(out, &r); err != nil {
		return nil, fmt.Errorf("the caller's answer to the elicitation: %w", err)
	}
	return &r, nil
}
