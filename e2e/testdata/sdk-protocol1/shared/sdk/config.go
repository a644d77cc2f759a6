package sdk

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
)

// decodeConfig decodes raw strictly into a new C: an unknown field, a value of
// the wrong type or trailing data is an error that names the field. Empty
// input means {} so a plugin without configuration needs no block.
func decodeConfig[C any](raw []byte) (C, error) {
	var cfg C
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&cfg); err != nil {
		return cfg, configError(err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return cfg, errors.New("config: unexpected data after the JSON object")
	}
	return cfg, nil
}

// configError rewrites encoding/json's errors into messages that name the
// field as the author wrote it in the configuration.
func configError(err error) error {
	var typeErr *json.UnmarshalTypeError
	var syntaxErr *json.SyntaxError
	switch {
	case errors.As(err, &typeErr):
		if typeErr.Field == "" {
			return fmt.Errorf("config: expected %s, got a JSON %s", typeErr.Type, typeErr.Value)
		}
		return fmt.Errorf("config: field %q: expected %s, got a JSON %s", typeErr.Field, typeErr.Type, typeErr.Value)
	case errors.As(err, &syntaxErr):
		return fmt.Errorf("config: invalid JSON at byte %d: %v", syntaxErr.Offset, err)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this; its message is stable
		// and already names the field.
		return fmt.Errorf("config: unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	}
	return fmt.Errorf("config: %w", err)
}
