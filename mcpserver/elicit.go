package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A plugin serving a call may put a question to the client that made it
// (the mcp bridge passes on a bridged server's elicitation/create). A
// session client that declared the elicitation capability for the question's
// mode is asked with elicitation/create on its session; any other client,
// and for now every 2026-07-28 client, has the question declined.

// declined is the answer for a client that cannot be asked.
var declined = json.RawMessage(`{"action":"decline"}`)

// elicitor is the session's host.Elicitor: params are MCP ElicitRequest
// params as JSON, the answer the client's ElicitResult as JSON.
func elicitor(ss *mcp.ServerSession) func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
	return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		var p mcp.ElicitParams
		if err := json.Unmarshal(params, &p); err != nil {
			return nil, fmt.Errorf("elicitation params: %w", err)
		}
		if p.Mode == "" {
			p.Mode = "form"
		}
		if !legacy(ss) || !canElicitMode(ss.InitializeParams().Capabilities, p.Mode) {
			return declined, nil
		}
		r, err := ss.Elicit(ctx, &p)
		if err != nil {
			return nil, fmt.Errorf("elicitation/create to the client: %w", err)
		}
		out, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode the client's elicitation answer: %w", err)
		}
		return out, nil
	}
}

// canElicitMode says whether a client with caps can answer an elicitation
// in mode ("form" or "url").
func canElicitMode(caps *mcp.ClientCapabilities, mode string) bool {
	switch mode {
	case "form":
		return canElicit(caps)
	case "url":
		return caps != nil && caps.Elicitation != nil && caps.Elicitation.URL != nil
	}
	return false
}
