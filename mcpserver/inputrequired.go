package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/host"
)

// A plugin's question (a bridged server's elicitation/create) for a client
// of 2026-07-28 becomes the call's input-required result, as the host's own
// Ask does: the protocol has the server ask in its result, not with a
// request of its own.
//
//   - With a session (stdio), the call waits, parked under a random
//     requestState as an Ask is (call.go), and the retry's answer is handed
//     to the waiting question.
//   - Without a session (HTTP, stateless.go), nothing may wait between
//     requests: the call that asked ends ABORTED, its question sealed into
//     the requestState, and the retry runs the call again. When the plugin
//     asks the same question again (the same mode, message, URL and form;
//     not the elicitationId, which a server may draw afresh), the retry's
//     answer is given without asking the client. This is the 2026-07-28
//     protocol's own way: a server written for it expects to run again with
//     the answers, and any replica holding the state key can serve the retry.

// elicitInput names a plugin's question in an input-required result.
const elicitInput = "elicitation"

// elicitQ is a plugin's question waiting for the handler serving its call.
type elicitQ struct {
	params *mcp.ElicitParams
	reply  chan *mcp.ElicitResult // buffered: the plugin may have given up; nil: asked in the result
}

// inputRequired hands a plugin's question to the handler serving c, which
// returns it to the client as an input-required result, and waits for the
// answer the client's retry carries.
func (c *call) inputRequired(ctx context.Context, p *mcp.ElicitParams) (json.RawMessage, error) {
	q := elicitQ{params: p, reply: make(chan *mcp.ElicitResult, 1)}
	select {
	case c.elicits <- q:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case r := <-q.reply:
		if r == nil {
			// Sent back in a stateless call's result: the retry runs the
			// call again.
			return nil, host.ErrAskedInResult
		}
		out, err := json.Marshal(r)
		if err != nil {
			return nil, fmt.Errorf("encode the client's elicitation answer: %w", err)
		}
		return out, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// respond hands a session client's retry to what the parked call waits
// for: a plugin's question, or else the host's Ask.
func (c *call) respond(responses mcp.InputResponseMap) {
	c.smu.Lock()
	q := c.pending
	c.pending = nil
	c.smu.Unlock()
	if q != nil {
		q.reply <- elicitAnswer(responses)
		return
	}
	c.answer(approvalFrom(responses))
}

// parkElicit records q as what the call waits for until the retry.
func (c *call) parkElicit(q *elicitQ) {
	c.smu.Lock()
	c.pending = q
	c.smu.Unlock()
}

// elicitAnswer is the client's answer to a plugin's question in a retry; a
// retry without one declines it.
func elicitAnswer(responses mcp.InputResponseMap) *mcp.ElicitResult {
	if r, ok := responses[elicitInput].(*mcp.ElicitResult); ok && r != nil {
		return r
	}
	return declinedResult()
}

func declinedResult() *mcp.ElicitResult { return &mcp.ElicitResult{Action: "decline"} }

// elicitDigest identifies a plugin's question across runs of its call:
// what the user is shown and asked for, not the elicitationId.
func elicitDigest(p *mcp.ElicitParams) string {
	schema, _ := json.Marshal(p.RequestedSchema)
	return digest(elicitInput, p.Mode, p.Message, p.URL, canonicalArgs(schema))
}

// carried is an answer given in an earlier round of a stateless call and
// sealed into the next requestState, so that a call asking several
// questions (an Ask, then a bridged server's form) collects every answer
// across its retries: Q is the question's digest, Approved the Ask's
// answer, Elicit a plugin's question's answer.
type carried struct {
	Q        string          `json:"q"`
	Approved bool            `json:"ok,omitempty"`
	Refusal  string          `json:"no,omitempty"` // why the retry's answer counts as none
	Elicit   json.RawMessage `json:"el,omitempty"`
}

// err is the Ask's answer's error, nil when the client answered.
func (a carried) err() error {
	if a.Refusal == "" {
		return nil
	}
	return errors.New(a.Refusal)
}

// preanswers are a stateless retry's answers, each given once to the
// question it answers.
type preanswers []carried

// approval takes the answer to the Ask q, if the retry has one.
func (p *preanswers) approval(q host.Question) (carried, bool) {
	return p.take(questionDigest(q), false)
}

// elicit takes the answer to the plugin's question q, if the retry has one.
func (p *preanswers) elicit(q *mcp.ElicitParams) (carried, bool) {
	return p.take(elicitDigest(q), true)
}

func (p *preanswers) take(q string, elicit bool) (carried, bool) {
	for i, a := range *p {
		if a.Q == q && (a.Elicit != nil) == elicit {
			*p = append((*p)[:i:i], (*p)[i+1:]...)
			return a, true
		}
	}
	return carried{}, false
}

// elicitResult reads a carried answer to a plugin's question.
func (a carried) elicitResult() *mcp.ElicitResult {
	var r mcp.ElicitResult
	if json.Unmarshal(a.Elicit, &r) != nil {
		return declinedResult()
	}
	return &r
}

// retryAnswers are the answers a stateless retry carries: those sealed from
// earlier rounds, and the client's answer to the question the state names.
func retryAnswers(a sealedAsk, responses mcp.InputResponseMap) (preanswers, error) {
	pre := append(preanswers(nil), a.Answers...)
	switch a.Input {
	case elicitInput:
		r, err := json.Marshal(elicitAnswer(responses))
		if err != nil {
			return nil, fmt.Errorf("the retry's answer to the elicitation: %w", err)
		}
		pre = append(pre, carried{Q: a.Question, Elicit: r})
	default:
		ans := approvalFrom(responses)
		c := carried{Q: a.Question, Approved: ans.approved}
		if ans.err != nil {
			c.Approved, c.Refusal = false, ans.err.Error()
		}
		pre = append(pre, c)
	}
	return pre, nil
}
