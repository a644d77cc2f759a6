package pipeline

import (
	"encoding/json"
	"sync"
)

// elicitations are the questions a plugin put to the caller during a call:
// each one's mode and the caller's action, never what was asked or
// answered (a form may carry a secret).
type elicitations struct {
	mu   sync.Mutex
	list []elicitation
}

type elicitation struct {
	Mode   string `json:"mode"`
	Action string `json:"action"`
}

// AddElicitation records that a question in mode (form, url) was put to the
// caller during the call and answered with action (accept, decline, cancel;
// error when the caller could not be reached). Observers (the audit) see
// the list (Elicitations).
func (e *Execution) AddElicitation(mode, action string) {
	e.elicitations.mu.Lock()
	e.elicitations.list = append(e.elicitations.list, elicitation{Mode: mode, Action: action})
	e.elicitations.mu.Unlock()
}

// Elicitations is the JSON array of the questions put to the caller during
// the call ({"mode", "action"} each, in order), or "" when none was.
func (e *Execution) Elicitations() string {
	e.elicitations.mu.Lock()
	defer e.elicitations.mu.Unlock()
	if len(e.elicitations.list) == 0 {
		return ""
	}
	b, err := json.Marshal(e.elicitations.list)
	if err != nil {
		return ""
	}
	return string(b)
}
