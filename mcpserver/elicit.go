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
// mode is asked with elicitation/create on its session; a 2026-07-28 client
// that declared it in its request gets an input-required result
// (inputrequired.go); any other client has the question declined.

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
		c, _ := ctx.Value(callKey{}).(*call)
		if !legacy(ss) {
			// 2026-07-28: the question becomes the call's input-required
			// result (inputrequired.go), for a client that says, in its
			// request, that it can answer it.
			if c == nil || !canElicitMode(c.req.ClientCapabilities(), p.Mode) {
				return declined, nil
			}
			return c.inputRequired(ctx, &p)
		}
		if !canElicitMode(ss.InitializeParams().Capabilities, p.Mode) {
			return declined, nil
		}
		if c != nil {
			ctx = c.relate(ctx)
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

// serveFrom records ctx as the context of the request serving c.
func (c *call) serveFrom(ctx context.Context) {
	c.smu.Lock()
	c.serving = ctx
	c.smu.Unlock()
}

// servedFrom says that no request serves c any more.
func (c *call) servedFrom() {
	c.smu.Lock()
	c.serving = nil
	c.smu.Unlock()
}

// relate is ctx, with the values of the request serving c when one does:
// the SDK then sends a question on that request's stream, as it does the
// host's approval questions, rather than on the session's stream, which a
// client need not open. Cancellation stays ctx's.
func (c *call) relate(ctx context.Context) context.Context {
	c.smu.Lock()
	defer c.smu.Unlock()
	if c.serving == nil {
		return ctx
	}
	return valuesFrom{Context: ctx, values: c.serving}
}

// valuesFrom is a context whose values are looked up in values first.
type valuesFrom struct {
	context.Context
	values context.Context
}

func (v valuesFrom) Value(key any) any {
	if x := v.values.Value(key); x != nil {
		return x
	}
	return v.Context.Value(key)
}
