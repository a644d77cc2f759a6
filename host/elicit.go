package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plugkit-go/plugkit/pipeline"
)

// Elicitor is a client session that can answer a plugin's question during
// one of its calls, such as an MCP client that supports elicitation: params
// are MCP ElicitRequest params, the answer an MCP ElicitResult, both JSON.
type Elicitor func(ctx context.Context, params json.RawMessage) (json.RawMessage, error)

// ErrAskedInResult is an Elicitor's error when the question went back to
// the caller in the call's own result (an MCP input-required result), to
// be answered in a retry that runs the call again: this call ends without
// an answer.
var ErrAskedInResult = errors.New("the question was returned to the caller in the call's result, to be answered in its retry")

// declined is the answer for a caller that cannot be asked.
var declined = json.RawMessage(`{"action":"decline"}`)

// SetElicitor registers el to answer the questions asked during the calls
// of caller (a name from Caller). Call release when the session ends.
func (a *Approvals) SetElicitor(caller string, el Elicitor) (release func()) {
	a.mu.Lock()
	if a.elicitors == nil {
		a.elicitors = map[string]Elicitor{}
	}
	a.elicitors[caller] = el
	a.mu.Unlock()
	return func() {
		a.mu.Lock()
		delete(a.elicitors, caller)
		a.mu.Unlock()
	}
}

func (a *Approvals) elicitor(caller string) Elicitor {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.elicitors[caller]
}

// elicit puts a plugin's question during call e to the client that made
// the call; a caller with no elicitor has it declined. The log says that a
// question was asked and how it was answered, never what was asked or
// answered (a form may carry a secret).
func (h *Host) elicit(ctx context.Context, e *pipeline.Execution, params json.RawMessage) (json.RawMessage, error) {
	var p struct {
		Mode string `json:"mode"`
	}
	_ = json.Unmarshal(params, &p)
	if p.Mode == "" {
		p.Mode = "form"
	}
	if p.Mode != "form" && p.Mode != "url" {
		// The audit records the mode; a plugin does not choose its text.
		p.Mode = "other"
	}
	el := h.Approvals.elicitor(e.Caller())
	if el == nil {
		h.log.Info("elicitation declined: the caller cannot be asked", "id", e.ID(), "tool", e.Name(), "caller", e.Caller(), "mode", p.Mode)
		e.AddElicitation(p.Mode, "decline")
		return declined, nil
	}
	out, err := el(ctx, params)
	if errors.Is(err, ErrAskedInResult) {
		h.log.Info("elicitation returned to the caller in the call's result, to be answered in its retry", "id", e.ID(), "tool", e.Name(), "caller", e.Caller(), "mode", p.Mode)
		e.AddElicitation(p.Mode, "retry")
		return nil, fmt.Errorf("ask caller %s: %w", e.Caller(), err)
	}
	if err != nil {
		h.log.Info("elicitation failed", "id", e.ID(), "tool", e.Name(), "caller", e.Caller(), "mode", p.Mode, "error", err)
		e.AddElicitation(p.Mode, "error")
		return nil, fmt.Errorf("ask caller %s: %w", e.Caller(), err)
	}
	var r struct {
		Action string `json:"action"`
	}
	_ = json.Unmarshal(out, &r)
	h.log.Info("elicitation answered", "id", e.ID(), "tool", e.Name(), "caller", e.Caller(), "mode", p.Mode, "action", r.Action)
	e.AddElicitation(p.Mode, auditedAction(r.Action))
	return out, nil
}

// auditedAction is a caller's action as the audit records it: one of the
// three MCP defines, or "invalid", so that a client cannot write its own
// text into the audit line.
func auditedAction(a string) string {
	switch a {
	case "accept", "decline", "cancel":
		return a
	}
	return "invalid"
}
