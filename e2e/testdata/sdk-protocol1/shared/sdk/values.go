package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// encodeJSON turns a handler's Go value into the JSON that crosses the wire.
// A json.RawMessage (or []byte holding JSON) is sent as is after a validity
// check, so a plugin that already has JSON does not pay for a round trip.
func encodeJSON(v any) (json.RawMessage, error) {
	switch raw := v.(type) {
	case json.RawMessage:
		return checkJSON(raw)
	case nil:
		return json.RawMessage("null"), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return b, nil
}

func checkJSON(raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) == 0 {
		return json.RawMessage("null"), nil
	}
	if !json.Valid(raw) {
		return nil, errors.New("json.RawMessage value is not valid JSON")
	}
	return raw, nil
}

// schemaText validates a JSON Schema given as text; empty means def.
func schemaText(field, text, def string) (json.RawMessage, error) {
	if text == "" {
		text = def
	}
	if !json.Valid([]byte(text)) {
		return nil, fmt.Errorf("%s is not valid JSON", field)
	}
	return json.RawMessage(text), nil
}

// joinErrors reports several problems on one line, which is how the host
// shows a plugin's failure; nil when there are none.
func joinErrors(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	msgs := make([]string, len(errs))
	for i, err := range errs {
		msgs[i] = err.Error()
	}
	return errors.New(strings.Join(msgs, "; "))
}
