package secrets

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// Hit is a credential found in a JSON value.
type Hit struct {
	// Kind names the credential's kind.
	Kind string
	// Pointer is the JSON Pointer (RFC 6901) of the string that holds it:
	// "/content", "/files/2/body"; "" is the value itself. A credential in an
	// object's key is reported at the object.
	Pointer string
}

// FindJSON returns the credentials in the strings of a JSON value, keys
// and values at any depth, in document order. raw must be valid JSON (the
// host has checked it); an error says where it is not.
func (s *Scanner) FindJSON(raw []byte) ([]Hit, error) {
	var hits []Hit
	err := walkStrings(raw, func(lit []byte, _ int, ptr func() string) error {
		text, _, err := decodeLiteral(lit)
		if err != nil {
			return err
		}
		for _, f := range s.Find(text) {
			hits = append(hits, Hit{Kind: f.Kind, Pointer: ptr()})
		}
		return nil
	})
	return hits, err
}

// RedactJSON returns raw with each credential in its strings replaced by
// Marker(kind), and what it replaced. Every byte outside a replaced
// credential is kept as it was, escapes included; raw itself is returned
// when there is nothing to replace.
func (s *Scanner) RedactJSON(raw []byte) ([]byte, []Hit, error) {
	var out []byte
	var hits []Hit
	copied := 0 // raw[:copied] is in out already
	err := walkStrings(raw, func(lit []byte, at int, ptr func() string) error {
		text, rawAt, err := decodeLiteral(lit)
		if err != nil {
			return err
		}
		found := s.Find(text)
		if len(found) == 0 {
			return nil
		}
		if out == nil {
			out = make([]byte, 0, len(raw))
		}
		out = append(out, raw[copied:at]...)
		last := 0 // offset in lit
		for _, f := range found {
			start, end := rawAt(f.Start), rawAt(f.End)
			out = append(out, lit[last:start]...)
			out = append(out, Marker(f.Kind)...)
			last = end
			hits = append(hits, Hit{Kind: f.Kind, Pointer: ptr()})
		}
		out = append(out, lit[last:]...)
		copied = at + len(lit)
		return nil
	})
	if err != nil || out == nil {
		return raw, nil, err
	}
	return append(out, raw[copied:]...), hits, nil
}

// frame is one open container during a walk.
type frame struct {
	object    bool
	key       string // object: the current member's key
	index     int    // array: the current item's index
	expectKey bool   // object: the next string is a key
}

// walkStrings calls visit with each string literal of raw (quotes
// included), its offset, and a function that returns its JSON Pointer. It
// relies on raw being valid JSON, and only notices the errors that would
// make it miss a string (an unterminated string, unbalanced brackets).
func walkStrings(raw []byte, visit func(lit []byte, at int, ptr func() string) error) error {
	var stack []frame
	for i := 0; i < len(raw); i++ {
		switch raw[i] {
		case '{':
			stack = append(stack, frame{object: true, expectKey: true})
		case '[':
			stack = append(stack, frame{})
		case '}', ']':
			if len(stack) == 0 {
				return errors.New("invalid JSON: unbalanced " + string(raw[i]) + " at offset " + strconv.Itoa(i))
			}
			stack = stack[:len(stack)-1]
		case ',':
			if n := len(stack); n > 0 {
				if stack[n-1].object {
					stack[n-1].expectKey = true
				} else {
					stack[n-1].index++
				}
			}
		case ':':
			if n := len(stack); n > 0 {
				stack[n-1].expectKey = false
			}
		case '"':
			end := literalEnd(raw, i)
			if end < 0 {
				return errors.New("invalid JSON: unterminated string at offset " + strconv.Itoa(i))
			}
			lit := raw[i:end]
			n := len(stack)
			isKey := n > 0 && stack[n-1].object && stack[n-1].expectKey
			depth := n
			if isKey {
				// A key's credential is reported at its object.
				depth = n - 1
				key, _, err := decodeLiteral(lit)
				if err != nil {
					return err
				}
				stack[n-1].key = key
			}
			ptr := func() string { return pointer(stack[:max(depth, 0)]) }
			if err := visit(lit, i, ptr); err != nil {
				return err
			}
			i = end - 1
		}
	}
	if len(stack) > 0 {
		return errors.New("invalid JSON: an object or array is not closed")
	}
	return nil
}

// literalEnd returns the offset just past the string literal that starts
// at raw[i], or -1. It jumps from quote to quote (IndexByte is vectorised)
// and skips a quote escaped by an odd run of backslashes.
func literalEnd(raw []byte, i int) int {
	for j := i + 1; ; {
		k := bytes.IndexByte(raw[j:], '"')
		if k < 0 {
			return -1
		}
		q := j + k
		n := 0
		for q-1-n > i && raw[q-1-n] == '\\' {
			n++
		}
		if n%2 == 0 {
			return q + 1
		}
		j = q + 1
	}
}

// pointer renders the path through the current member of each frame of
// stack (for a key, stack stops before the key's own object, so the path is
// the object's).
func pointer(stack []frame) string {
	var b strings.Builder
	for _, f := range stack {
		b.WriteByte('/')
		if f.object {
			b.WriteString(strings.NewReplacer("~", "~0", "/", "~1").Replace(f.key))
		} else {
			b.WriteString(strconv.Itoa(f.index))
		}
	}
	return b.String()
}

// decodeLiteral decodes a JSON string literal (quotes included). rawAt maps
// an offset in the decoded text (0 to its length) to the offset in lit of
// the byte or escape it came from, so that a span of the text can be cut
// out of the literal with every other byte left as written.
func decodeLiteral(lit []byte) (text string, rawAt func(int) int, err error) {
	if len(lit) < 2 || lit[0] != '"' || lit[len(lit)-1] != '"' {
		return "", nil, errors.New("invalid JSON string")
	}
	body := lit[1 : len(lit)-1]
	escapes := bytes.Count(body, []byte{'\\'})
	if escapes == 0 {
		return string(body), func(i int) int { return i + 1 }, nil
	}
	dec := make([]byte, 0, len(body))
	// marks holds, for each escape, the decoded offset it starts at and its
	// offset in lit; between two escapes both advance together.
	type mark struct{ dec, raw int }
	marks := make([]mark, 1, 2*escapes+1)
	marks[0] = mark{0, 1}
	for i := 0; i < len(body); {
		if body[i] != '\\' {
			// Copy the run up to the next escape at once.
			j := bytes.IndexByte(body[i:], '\\')
			if j < 0 {
				j = len(body) - i
			}
			dec = append(dec, body[i:i+j]...)
			i += j
			continue
		}
		if i+1 >= len(body) {
			return "", nil, errors.New("invalid JSON string: trailing backslash")
		}
		start := i
		var r rune
		switch body[i+1] {
		case '"', '\\', '/':
			r, i = rune(body[i+1]), i+2
		case 'b':
			r, i = '\b', i+2
		case 'f':
			r, i = '\f', i+2
		case 'n':
			r, i = '\n', i+2
		case 'r':
			r, i = '\r', i+2
		case 't':
			r, i = '\t', i+2
		case 'u':
			u, ok := hex4(body, i+2)
			if !ok {
				return "", nil, errors.New("invalid JSON string: bad \\u escape")
			}
			r, i = rune(u), i+6
			if utf16.IsSurrogate(r) {
				if lo, ok := hex4(body, i+2); ok && i+1 < len(body) && body[i] == '\\' && body[i+1] == 'u' {
					if pair := utf16.DecodeRune(r, rune(lo)); pair != utf8.RuneError {
						r, i = pair, i+6
						break
					}
				}
				r = utf8.RuneError
			}
		default:
			return "", nil, errors.New("invalid JSON string: bad escape")
		}
		// The escape's bytes all map to its start; what follows it maps
		// from its end.
		marks = append(marks, mark{len(dec), start + 1})
		dec = utf8.AppendRune(dec, r)
		marks = append(marks, mark{len(dec), i + 1})
	}
	rawAt = func(d int) int {
		// The last mark at or before d; past an escape's start but before
		// its end (inside a rune it decoded to) maps to the escape's start.
		k, _ := slices.BinarySearchFunc(marks, d, func(m mark, d int) int { return m.dec - d })
		if k == len(marks) || marks[k].dec > d {
			k--
		}
		for k+1 < len(marks) && marks[k+1].dec == d {
			k++
		}
		m := marks[k]
		if k%2 == 1 { // an escape's start mark: d is within its rune
			return m.raw
		}
		return m.raw + (d - m.dec)
	}
	// dec is not written again: the string may share its memory.
	return unsafe.String(unsafe.SliceData(dec), len(dec)), rawAt, nil
}

func hex4(b []byte, i int) (uint16, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	v, err := strconv.ParseUint(string(b[i:i+4]), 16, 16)
	return uint16(v), err == nil
}
