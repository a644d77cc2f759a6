package mcpserver

import (
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/host"
)

// The answers of a stateless call's rounds travel sealed: a plugin's
// question is known again by what it shows (not its elicitationId), each
// answer is given once, and an Ask's answer and a question's do not stand
// for each other.
func TestRetryAnswersAcrossRounds(t *testing.T) {
	s, err := newSealer([][]byte{key(7)})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ask := host.Question{Tool: "fetch", Arguments: `{"u":1}`, Question: "fetch is destructive"}
	form := &mcp.ElicitParams{Mode: "form", Message: "Your name?", RequestedSchema: map[string]any{"type": "object"}, ElicitationID: "one"}

	// Round 1 asked the Ask, approved in the retry; round 2 asks the form.
	pre, err := retryAnswers(sealedAsk{Question: questionDigest(ask), Input: approvalInput},
		mcp.InputResponseMap{approvalInput: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}})
	if err != nil {
		t.Fatal(err)
	}
	given, ok := pre.approval(ask)
	if !ok || !given.Approved || given.err() != nil {
		t.Fatalf("the Ask's answer: %+v %t", given, ok)
	}
	if _, ok := pre.approval(ask); ok {
		t.Fatal("an answer was given twice")
	}
	state := s.seal(sealedAsk{Principal: "p", Tool: "fetch", Question: elicitDigest(form), Input: elicitInput, Answers: []carried{given}, Expires: now.Add(time.Minute).UnixMilli()})
	a, err := s.open(state, now)
	if err != nil {
		t.Fatal(err)
	}
	pre, err = retryAnswers(a, mcp.InputResponseMap{elicitInput: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann"}}})
	if err != nil {
		t.Fatal(err)
	}
	// Round 3: the Ask again, then the server's form again with an
	// elicitationId of its own.
	if got, ok := pre.approval(ask); !ok || !got.Approved {
		t.Fatalf("the carried Ask answer: %+v %t", got, ok)
	}
	again := *form
	again.ElicitationID = "two"
	if _, ok := pre.approval(host.Question{Tool: "fetch", Arguments: `{"u":2}`, Question: "fetch is destructive"}); ok {
		t.Fatal("an answer for other arguments was taken")
	}
	got, ok := pre.elicit(&again)
	if !ok {
		t.Fatal("the form's answer is not found for the same form with another elicitationId")
	}
	r := got.elicitResult()
	if r.Action != "accept" || r.Content["name"] != "Ann" {
		t.Fatalf("the form's answer: %+v", r)
	}
	other := *form
	other.Message = "Your password?"
	if _, ok := pre.elicit(&other); ok {
		t.Fatal("an answer to one form was given to another")
	}

	// A retry without an answer declines a plugin's question, and refuses
	// an Ask (saying why).
	pre, _ = retryAnswers(sealedAsk{Question: elicitDigest(form), Input: elicitInput}, nil)
	if got, _ := pre.elicit(form); got.elicitResult().Action != "decline" {
		t.Errorf("no answer to a question: %s", got.Elicit)
	}
	pre, _ = retryAnswers(sealedAsk{Question: questionDigest(ask), Input: approvalInput}, nil)
	if got, _ := pre.approval(ask); got.Approved || got.err() == nil {
		t.Errorf("no answer to an Ask: %+v", got)
	}
}
