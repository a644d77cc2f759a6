package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/host"
)

// How an Ask that the calling client answers is put to it: elicitation/create
// on a session before 2026-07-28, an input-required result after.

// legacy says whether the session negotiated a protocol before 2026-07-28,
// where a server sends elicitation/create itself; the SDK decides the same
// way whether a result may be input-required.
func legacy(ss *mcp.ServerSession) bool {
	if ss == nil {
		return false // a 2026-07-28 request served by the HTTP hot path
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion < "2026-07-28"
}

// canElicit says whether the client can answer a form elicitation (a client
// that names no mode supports forms).
func canElicit(caps *mcp.ClientCapabilities) bool {
	if caps == nil || caps.Elicitation == nil {
		return false
	}
	e := caps.Elicitation
	return e.Form != nil || e.URL == nil
}

// approvalInput names the question in an input-required result.
const approvalInput = "approval"

// approvalSchema is the form: one boolean, off unless the user turns it on.
var approvalSchema = json.RawMessage(`{"type":"object","properties":{"approve":{"type":"boolean","title":"Approve","description":"Allow this tool call?","default":false}}}`)

func approvalRequest(q host.Question) *mcp.ElicitParams {
	return &mcp.ElicitParams{
		Mode:            "form",
		Message:         fmt.Sprintf("%s\n\nTool: %s\nArguments: %s\n\nApprove this call?", q.Question, q.Tool, q.Arguments),
		RequestedSchema: approvalSchema,
	}
}

// approved reads an answer: only accept with approve = true approves.
func approved(r *mcp.ElicitResult) bool {
	if r == nil || r.Action != "accept" {
		return false
	}
	v, ok := r.Content["approve"].(bool)
	return ok && v
}

func approvalFrom(responses mcp.InputResponseMap) answer {
	r, ok := responses[approvalInput].(*mcp.ElicitResult)
	if !ok {
		return answer{err: errors.New("the retry carried no answer to the approval question")}
	}
	return answer{approved: approved(r)}
}

// startElicit puts q to the client's user in the background; stop ends the
// question early, and the answer comes on the channel either way.
func startElicit(ctx context.Context, ss *mcp.ServerSession, q host.Question) (asked chan answer, stop context.CancelFunc) {
	ctx, stop = context.WithCancel(ctx)
	asked = make(chan answer, 1)
	go func() {
		ok, err := elicit(ctx, ss, q)
		asked <- answer{ok, err}
	}()
	return asked, stop
}

func elicit(ctx context.Context, ss *mcp.ServerSession, q host.Question) (bool, error) {
	r, err := ss.Elicit(ctx, approvalRequest(q))
	if err != nil {
		return false, fmt.Errorf("elicitation failed: %w", err)
	}
	return approved(r), nil
}
