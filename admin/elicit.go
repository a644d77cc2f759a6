package admin

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/plugkit-go/plugkit/host"
)

// A plugin serving a call made over the admin socket may ask the caller a
// question (a bridged server's elicitation/create). An interactive call's
// client gets it on the call's stream, as it gets an approval question, and
// answers it on /v1/answer with the question's key; a call that is not
// interactive has it declined by the host.

// Elicitation is a plugin's question during a call: Params are MCP
// ElicitRequest params (mode form with a message and a requested schema,
// or mode url with a message and a URL).
type Elicitation struct {
	ID     string          `json:"id"`
	Tool   string          `json:"tool"`
	Params json.RawMessage `json:"params"`
}

// elicitor is the host.Elicitor of an interactive call of tool made by the
// process pid: it sends the question on the call's stream and waits for
// that process's answer.
func (s *Server) elicitor(tool string, pid int, send func(CallEvent)) host.Elicitor {
	return func(ctx context.Context, params json.RawMessage) (json.RawMessage, error) {
		id := "elicit-" + rand.Text()
		wt := &waiter{reply: make(chan json.RawMessage, 1), key: rand.Text(), pid: pid}
		s.mu.Lock()
		s.waiting[id] = wt
		s.mu.Unlock()
		defer func() {
			s.mu.Lock()
			delete(s.waiting, id)
			s.mu.Unlock()
		}()
		send(CallEvent{Elicitation: &Elicitation{ID: id, Tool: tool, Params: params}, AnswerKey: wt.key})
		select {
		case out := <-wt.reply:
			return out, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("no answer: %w", ctx.Err())
		}
	}
}

// checkElicited says what is wrong with an answer to an elicitation: it
// must be an ElicitResult whose action is accept, decline or cancel, with
// content (an object) only when it accepts.
func checkElicited(raw json.RawMessage) error {
	if len(raw) == 0 {
		return errors.New("no elicited answer (an elicitation is answered with elicited, not approved)")
	}
	var r struct {
		Action  string          `json:"action"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return fmt.Errorf("elicited: %w", err)
	}
	switch r.Action {
	case "accept":
	case "decline", "cancel":
		if len(r.Content) > 0 && string(r.Content) != "null" {
			return fmt.Errorf("elicited: action %s carries content; only accept does", r.Action)
		}
	default:
		return fmt.Errorf("elicited: action %q; want accept, decline or cancel", r.Action)
	}
	if len(r.Content) > 0 && string(r.Content) != "null" {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(r.Content, &obj); err != nil {
			return fmt.Errorf("elicited: content is not an object: %w", err)
		}
	}
	return nil
}
