package pipeline

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// argumentLimit is the bound on the arguments of a call to reg (nil: a
// tool that does not exist).
func (t *Tools) argumentLimit(reg *registered) int {
	if reg != nil && reg.maxArgs > 0 {
		return reg.maxArgs
	}
	return t.opts.MaxArgumentBytes
}

// oversized is the refusal of arguments of n bytes over limit, checked
// before they are parsed or shown to anyone.
func oversized(n, limit int, tool string) *Error {
	return &Error{Code: CodeInvalidArguments, Message: fmt.Sprintf(
		"the arguments (%d bytes) are larger than max_argument_bytes (%d bytes) of tool %s", n, limit, tool)}
}

// checkArguments is stage 0's argument check: it parses the arguments,
// validates them against the tool's schema and returns their canonical form
// (object keys sorted, no insignificant space, numbers as written).
func checkArguments(t *registered, raw []byte) (string, *Error) {
	if len(bytes.TrimSpace(raw)) == 0 {
		raw = []byte("{}")
	}
	v, text, err := parseJSONText(raw)
	var dup *DuplicateKeyError
	if errors.As(err, &dup) {
		return "", &Error{Code: CodeInvalidArguments, Message: dup.Error()}
	}
	if err != nil {
		return "", &Error{Code: CodeInvalidArguments, Message: "arguments are not valid JSON: " + err.Error()}
	}
	// The fast check accepts most valid arguments without allocating; what it
	// does not accept, jsonschema judges and words.
	if t.fast == nil || !t.fast.accepts(v) {
		if err := validate(t, v); err != nil {
			return "", &Error{Code: CodeInvalidArguments, Message: describeInvalid(err)}
		}
	}
	bp := canonicalBuffers.Get().(*[]byte)
	defer canonicalBuffers.Put(bp)
	b := appendCanonical((*bp)[:0], v)
	*bp = b
	if string(b) == text {
		// Most callers already send canonical JSON: keep the parser's copy.
		return text, nil
	}
	return string(b), nil
}

// validate runs jsonschema. It panics on some inputs (a bounded number with
// an exponent beyond a million): those arguments are refused, not a host
// error.
func validate(t *registered, v any) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("the validator could not check them (%v); is a number out of range?", p)
		}
	}()
	schema, err := t.fullSchema()
	if err != nil {
		return fmt.Errorf("the tool's schema could not be compiled again: %w", err)
	}
	return schema.Validate(v)
}

// canonicalBuffers recycles the buffers canonical forms are written into.
var canonicalBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 256); return &b }}

var printer = message.NewPrinter(language.English)

// describeInvalid turns a schema error into "invalid arguments at /a: got
// string, want number" (every leaf cause, joined).
func describeInvalid(err error) string {
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		return "invalid arguments: " + err.Error()
	}
	var parts []string
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			parts = append(parts, "at "+pointer(e.InstanceLocation)+": "+e.ErrorKind.LocalizedString(printer))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(ve)
	// jsonschema finds the causes in map order: sorted, the same bad call
	// is always worded the same way.
	slices.Sort(parts)
	return "invalid arguments " + strings.Join(parts, "; ")
}

// pointer renders a JSON Pointer (RFC 6901).
func pointer(loc []string) string {
	if len(loc) == 0 {
		return "/"
	}
	var b strings.Builder
	for _, tok := range loc {
		b.WriteByte('/')
		b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(tok))
	}
	return b.String()
}

// appendCanonical writes v (as produced by parseJSON) in canonical form.
func appendCanonical(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...)
	case bool:
		if v {
			return append(b, "true"...)
		}
		return append(b, "false"...)
	case json.Number:
		return append(b, v...)
	case string:
		return appendString(b, v)
	case []any:
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendCanonical(b, e)
		}
		return append(b, ']')
	case map[string]any:
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, k)
			b = append(b, ':')
			b = appendCanonical(b, v[k])
		}
		return append(b, '}')
	default:
		// parseJSON produces only the types above.
		panic(fmt.Sprintf("canonical JSON: unexpected %T", v))
	}
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as JSON, escaping only what RFC 8259 requires.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' && c < utf8.RuneSelf {
			b = append(b, c)
			i++
			continue
		}
		if c < utf8.RuneSelf {
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, `\ufffd`...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
