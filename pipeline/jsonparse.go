package pipeline

import (
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// parseJSONText parses one JSON value into the shapes the schema
// validator reads (map[string]any, []any, json.Number, string, bool, nil),
// as encoding/json with UseNumber would, and returns its copy of the input,
// which the caller may reuse as the canonical form when it already is. It
// exists because stage 0 runs on every call: it copies the input once and
// slices keys, strings without escapes and numbers out of that copy instead
// of allocating each.
func parseJSONText(raw []byte) (any, string, error) {
	p := jsonParser{s: string(raw)}
	p.space()
	v, err := p.value(0)
	if err != nil {
		return nil, "", err
	}
	p.space()
	if p.i != len(p.s) {
		return nil, "", p.errorf("unexpected data after the top-level value")
	}
	return v, p.s, nil
}

// DuplicateKeyError is an object that names one key twice, at any depth.
type DuplicateKeyError struct {
	Key string
	// Offset is where the second one starts in the input.
	Offset int
}

func (e *DuplicateKeyError) Error() string {
	k := validUTF8(e.Key)
	if len(k) > maxKeyShown {
		// Cut on a rune boundary: the message stays valid UTF-8.
		n := maxKeyShown
		for n > 0 && !utf8.RuneStart(k[n]) {
			n--
		}
		k = k[:n] + "…"
	}
	return fmt.Sprintf("duplicate key %s at offset %d", appendString(nil, k), e.Offset)
}

// maxKeyShown bounds the key a DuplicateKeyError quotes.
const maxKeyShown = 64

// maxDepth bounds nesting so that hostile arguments cannot exhaust the stack.
const maxDepth = 512

type jsonParser struct {
	s string
	i int
}

func (p *jsonParser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s at offset %d", fmt.Sprintf(format, args...), p.i)
}

func (p *jsonParser) space() {
	for p.i < len(p.s) {
		switch p.s[p.i] {
		case ' ', '\t', '\n', '\r':
			p.i++
		default:
			return
		}
	}
}

func (p *jsonParser) value(depth int) (any, error) {
	if p.i >= len(p.s) {
		return nil, p.errorf("unexpected end of JSON input")
	}
	switch c := p.s[p.i]; {
	case c == '{':
		return p.object(depth + 1)
	case c == '[':
		return p.array(depth + 1)
	case c == '"':
		return p.str()
	case c == '-' || (c >= '0' && c <= '9'):
		return p.number()
	case strings.HasPrefix(p.s[p.i:], "true"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "false"):
		p.i += 5
		return false, nil
	case strings.HasPrefix(p.s[p.i:], "null"):
		p.i += 4
		return nil, nil
	default:
		return nil, p.errorf("invalid character %q looking for beginning of value", c)
	}
}

func (p *jsonParser) object(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested too deeply")
	}
	p.i++ // {
	m := map[string]any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		return m, nil
	}
	for {
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != '"' {
			return nil, p.errorf("expected a string key")
		}
		keyAt := p.i
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		p.space()
		if p.i >= len(p.s) || p.s[p.i] != ':' {
			return nil, p.errorf("expected ':' after object key")
		}
		p.i++
		p.space()
		// A key given twice is refused, not resolved: a policy reading
		// the first value and a tool reading the last would each see an
		// argument the other did not. Keys compare unescaped, so "\u0070"
		// and "p" are the same key.
		if _, dup := m[k]; dup {
			return nil, &DuplicateKeyError{Key: k, Offset: keyAt}
		}
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		m[k] = v
		p.space()
		if p.i >= len(p.s) {
			return nil, p.errorf("unexpected end of JSON input")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case '}':
			p.i++
			return m, nil
		default:
			return nil, p.errorf("invalid character %q after object key:value pair", p.s[p.i])
		}
	}
}

func (p *jsonParser) array(depth int) (any, error) {
	if depth > maxDepth {
		return nil, p.errorf("nested too deeply")
	}
	p.i++ // [
	a := []any{}
	p.space()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		return a, nil
	}
	for {
		p.space()
		v, err := p.value(depth)
		if err != nil {
			return nil, err
		}
		a = append(a, v)
		p.space()
		if p.i >= len(p.s) {
			return nil, p.errorf("unexpected end of JSON input")
		}
		switch p.s[p.i] {
		case ',':
			p.i++
		case ']':
			p.i++
			return a, nil
		default:
			return nil, p.errorf("invalid character %q after array element", p.s[p.i])
		}
	}
}

// str reads a string; one without escapes is a slice of the input.
func (p *jsonParser) str() (string, error) {
	p.i++ // "
	start := p.i
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			s := p.s[start:p.i]
			p.i++
			if !utf8.ValidString(s) {
				return validUTF8(s), nil
			}
			return s, nil
		case c == '\\':
			return p.escaped(start)
		case c < 0x20:
			return "", p.errorf("invalid control character in string")
		}
		p.i++
	}
	return "", p.errorf("unexpected end of JSON input in string")
}

// escaped finishes a string that has escapes, from its first backslash.
func (p *jsonParser) escaped(start int) (string, error) {
	var b strings.Builder
	b.WriteString(p.s[start:p.i])
	for p.i < len(p.s) {
		c := p.s[p.i]
		switch {
		case c == '"':
			p.i++
			return validUTF8(b.String()), nil
		case c < 0x20:
			return "", p.errorf("invalid control character in string")
		case c != '\\':
			b.WriteByte(c)
			p.i++
			continue
		}
		if p.i+1 >= len(p.s) {
			break
		}
		e := p.s[p.i+1]
		p.i += 2
		switch e {
		case '"', '\\', '/':
			b.WriteByte(e)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := p.hex4()
			if !ok {
				return "", p.errorf("invalid \\u escape in string")
			}
			if utf16.IsSurrogate(r) {
				// A surrogate pair is two escapes; a lone half is U+FFFD,
				// as encoding/json decodes it.
				r2 := rune(-1)
				if strings.HasPrefix(p.s[p.i:], `\u`) {
					save := p.i
					p.i += 2
					if x, ok := p.hex4(); ok {
						r2 = x
					} else {
						return "", p.errorf("invalid \\u escape in string")
					}
					if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
						b.WriteRune(dec)
						continue
					}
					p.i = save
				}
				r = utf8.RuneError
			}
			b.WriteRune(r)
		default:
			return "", p.errorf("invalid escape character %q in string", e)
		}
	}
	return "", p.errorf("unexpected end of JSON input in string")
}

func (p *jsonParser) hex4() (rune, bool) {
	if p.i+4 > len(p.s) {
		return 0, false
	}
	var r rune
	for _, c := range []byte(p.s[p.i : p.i+4]) {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c = c - 'a' + 10
		case c >= 'A' && c <= 'F':
			c = c - 'A' + 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	p.i += 4
	return r, true
}

// number reads a number following JSON's grammar, kept as written.
func (p *jsonParser) number() (any, error) {
	start := p.i
	if p.s[p.i] == '-' {
		p.i++
	}
	digits := func() int {
		n := 0
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
			n++
		}
		return n
	}
	if p.i < len(p.s) && p.s[p.i] == '0' {
		p.i++
	} else if digits() == 0 {
		return nil, p.errorf("invalid number")
	}
	if p.i < len(p.s) && p.s[p.i] == '.' {
		p.i++
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	if p.i < len(p.s) && (p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		p.i++
		if p.i < len(p.s) && (p.s[p.i] == '+' || p.s[p.i] == '-') {
			p.i++
		}
		if digits() == 0 {
			return nil, p.errorf("invalid number")
		}
	}
	return json.Number(p.s[start:p.i]), nil
}

// validUTF8 replaces each invalid byte with U+FFFD, as encoding/json does.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteRune(utf8.RuneError)
		} else {
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}
