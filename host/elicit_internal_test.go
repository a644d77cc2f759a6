package host

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/pipeline"
)

// TestElicitGoesToTheCallsCaller: a plugin's question during a call goes to
// the elicitor of the caller that made the call and no other; a caller
// without one has it declined; the log says what was answered, never the
// content.
func TestElicitGoesToTheCallsCaller(t *testing.T) {
	var logged bytes.Buffer
	h := &Host{Approvals: NewApprovals(), log: hclog.New(&hclog.LoggerOptions{Output: &logged})}
	alice, releaseAlice := h.Approvals.Caller("mcp", nil)
	bob, releaseBob := h.Approvals.Caller("mcp", nil)
	defer releaseBob()
	var askedAlice, askedBob int
	stopAlice := h.Approvals.SetElicitor(alice, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		askedAlice++
		return json.RawMessage(`{"action":"accept","content":{"pin":"1234"}}`), nil
	})
	stopBob := h.Approvals.SetElicitor(bob, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		askedBob++
		return json.RawMessage(`{"action":"cancel"}`), nil
	})
	defer stopBob()
	params := json.RawMessage(`{"message":"PIN?","requestedSchema":{"type":"object"}}`)

	out, err := h.elicit(t.Context(), pipeline.NewExecution("c-1", "t", alice, nil, `{}`), params)
	if err != nil || !strings.Contains(string(out), `"accept"`) {
		t.Fatalf("alice's call: %s %v", out, err)
	}
	if askedAlice != 1 || askedBob != 0 {
		t.Errorf("asked alice %d, bob %d times; want alice once", askedAlice, askedBob)
	}
	if !strings.Contains(logged.String(), "mode=form action=accept") || strings.Contains(logged.String(), "1234") || strings.Contains(logged.String(), "PIN?") {
		t.Errorf("log: %s", logged.String())
	}

	// A caller whose session ended, and one that never could answer.
	stopAlice()
	releaseAlice()
	for _, caller := range []string{alice, "local:cli#9"} {
		out, err := h.elicit(t.Context(), pipeline.NewExecution("c-2", "t", caller, nil, `{}`), params)
		if err != nil || string(out) != `{"action":"decline"}` {
			t.Errorf("caller %s: %s %v, want a decline", caller, out, err)
		}
	}
	if askedAlice != 1 || askedBob != 0 {
		t.Errorf("asked alice %d, bob %d times after; want no more", askedAlice, askedBob)
	}
}

// TestElicitRecordedForTheAudit: each question asked during a call is kept
// on the call as its mode and the caller's action, in order, for the audit;
// a mode or action outside MCP's is recorded as other or invalid, never as
// the text a plugin or client chose; the content never.
func TestElicitRecordedForTheAudit(t *testing.T) {
	h := &Host{Approvals: NewApprovals(), log: hclog.NewNullLogger()}
	caller, release := h.Approvals.Caller("cli", nil)
	defer release()
	answers := []string{`{"action":"accept","content":{"pin":"1234"}}`, `{"action":"I agree, pin 1234"}`, `{"action":"cancel"}`}
	defer h.Approvals.SetElicitor(caller, func(context.Context, json.RawMessage) (json.RawMessage, error) {
		a := answers[0]
		answers = answers[1:]
		return json.RawMessage(a), nil
	})()
	e := pipeline.NewExecution("c-1", "t", caller, nil, `{}`)
	if e.Elicitations() != "" {
		t.Fatalf("a call without questions records %s", e.Elicitations())
	}
	for _, params := range []string{`{"message":"PIN?"}`, `{"mode":"url","url":"https://example.com"}`, `{"mode":"pin 1234"}`} {
		if _, err := h.elicit(t.Context(), e, json.RawMessage(params)); err != nil {
			t.Fatal(err)
		}
	}
	want := `[{"mode":"form","action":"accept"},{"mode":"url","action":"invalid"},{"mode":"other","action":"cancel"}]`
	if got := e.Elicitations(); got != want {
		t.Errorf("recorded %s, want %s", got, want)
	}
	// The caller that cannot be asked: a decline, recorded as one.
	e = pipeline.NewExecution("c-2", "t", "local:cli#9", nil, `{}`)
	if _, err := h.elicit(t.Context(), e, json.RawMessage(`{"mode":"url"}`)); err != nil {
		t.Fatal(err)
	}
	if got := e.Elicitations(); got != `[{"mode":"url","action":"decline"}]` {
		t.Errorf("recorded %s for a caller that cannot be asked", got)
	}
}
