package admin

import (
	"encoding/json"
	"testing"
)

// TestCheckElicited: an answer to an elicitation is taken only when it is an
// ElicitResult the server can read: a known action, content only with
// accept, and content an object.
func TestCheckElicited(t *testing.T) {
	for answer, ok := range map[string]bool{
		`{"action":"accept","content":{"name":"Ann"}}`: true,
		`{"action":"accept"}`:                          true,
		`{"action":"decline"}`:                         true,
		`{"action":"cancel","content":null}`:           true,
		``:                                             false,
		`{"approved":true}`:                            false,
		`{"action":"allow"}`:                           false,
		`{"action":"decline","content":{"name":"Ann"}}`: false,
		`{"action":"accept","content":["Ann"]}`:         false,
		`{"action":`:                                    false,
	} {
		if err := checkElicited(json.RawMessage(answer)); (err == nil) != ok {
			t.Errorf("answer %s: error %v, want accepted = %v", answer, err, ok)
		}
	}
}
