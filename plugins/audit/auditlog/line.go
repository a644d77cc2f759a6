package auditlog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// ZeroHash is the prev of the first line of a log.
var ZeroHash = strings.Repeat("0", 64)

// Line is one audited call: one line of the log.
type Line struct {
	// Seq numbers the lines from 1, without gaps.
	Seq uint64
	// Time is when the line was written; it is recorded in UTC.
	Time time.Time
	// ID is the call's id.
	ID string
	// Caller is the client or plugin that made the call.
	Caller string
	// Principal and PrincipalKind are who the call was made for (its id
	// and kind); both "" when nobody said, and then not recorded.
	Principal, PrincipalKind string
	// Tool is the tool name as the caller asked for it.
	Tool string
	// OK is true when the call succeeded.
	OK bool
	// Code is "" on success, else the result code.
	Code string
	// DecidedBy names the plugin or rule that denied or blocked the call.
	DecidedBy string
	// Duration is how long the call took in the host; it is recorded in
	// whole nanoseconds as decimal milliseconds.
	Duration time.Duration
	// ArgsSHA256 is Digest of the call's argument bytes.
	ArgsSHA256 string
	// Arguments is nil when arguments are not recorded; otherwise valid
	// JSON (see ArgumentsJSON). Bytes that are not valid JSON are recorded
	// as a JSON string of them.
	Arguments json.RawMessage
	// Shadow is what listeners in shadow would have decided on the call
	// and did not; nil when none would have objected (not recorded then).
	Shadow []Shadow
	// Approval is nil unless an approval route decided the call's Ask:
	// then how (route, each answer, quorum or timeout), valid JSON.
	Approval json.RawMessage
	// Elicitations is nil unless a plugin asked the caller something
	// during the call: then each question's mode and the caller's action,
	// in order, never what was asked or answered; valid JSON.
	Elicitations json.RawMessage
	// PrincipalAttributes are the principal's attributes ("group:canary",
	// "uid:1000"), what rules select principals by, so that a replay of
	// the call can select as the call's rules did. The auditor records
	// them (empty when there are none) with every principal; nil on a
	// line written before they were recorded, or without a principal.
	PrincipalAttributes []string
	// Prev is the previous line's Hash; ZeroHash on the first line.
	Prev string
	// Hash is Chain(Prev, Body()).
	Hash string
}

// Digest is the lowercase hex SHA-256 of b: how args_sha256 is computed.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Chain computes a line's hash from the previous line's hash (64 hex
// characters, ZeroHash for the first line) and the line's Body: the
// lowercase hex SHA-256 of prev's ASCII bytes followed by body.
func Chain(prev string, body []byte) string {
	h := sha256.New()
	h.Write([]byte(prev))
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// ArgumentsJSON is how a call's argument bytes are recorded in the arguments
// member: compacted when they are valid JSON (the host's canonical arguments
// already are), otherwise a JSON string of them, so a call whose arguments
// were not JSON is still recorded and the line stays valid.
func ArgumentsJSON(raw []byte) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err == nil && len(raw) > 0 {
		return b.Bytes()
	}
	return appendString(nil, string(raw))
}

// Body is the line's canonical JSON without the hash member: what Chain
// hashes.
func (l *Line) Body() []byte { return l.appendBody(nil) }

// Seal sets Prev and Hash: l becomes the line that follows a line whose hash
// is prev.
func (l *Line) Seal(prev string) {
	l.Prev = prev
	l.Hash = Chain(prev, l.Body())
}

// Text is the whole line in canonical form, hash included, without the
// newline. (Not MarshalText: json.Marshal of a Line would become a string.)
func (l *Line) Text() []byte { return l.appendLine(nil) }

// appendBody appends the canonical JSON of every member but hash.
func (l *Line) appendBody(b []byte) []byte {
	b = append(b, `{"seq":`...)
	b = strconv.AppendUint(b, l.Seq, 10)
	b = append(b, `,"time":`...)
	b = appendString(b, l.Time.UTC().Format(time.RFC3339Nano))
	b = append(b, `,"id":`...)
	b = appendString(b, l.ID)
	b = append(b, `,"caller":`...)
	b = appendString(b, l.Caller)
	if l.Principal != "" || l.PrincipalKind != "" {
		b = append(b, `,"principal":`...)
		b = appendString(b, l.Principal)
		b = append(b, `,"principal_kind":`...)
		b = appendString(b, l.PrincipalKind)
	}
	b = append(b, `,"tool":`...)
	b = appendString(b, l.Tool)
	b = append(b, `,"ok":`...)
	b = strconv.AppendBool(b, l.OK)
	b = append(b, `,"code":`...)
	b = appendString(b, l.Code)
	b = append(b, `,"decided_by":`...)
	b = appendString(b, l.DecidedBy)
	b = append(b, `,"duration_ms":`...)
	b = appendMillis(b, l.Duration)
	b = append(b, `,"args_sha256":`...)
	b = appendString(b, l.ArgsSHA256)
	if l.Arguments != nil {
		b = append(b, `,"arguments":`...)
		// ArgumentsJSON again: a Line built by hand with bad Arguments
		// still encodes to a valid line, and a parsed one is unchanged.
		b = append(b, ArgumentsJSON(l.Arguments)...)
	}
	if len(l.Shadow) > 0 {
		b = append(b, `,"shadow":`...)
		b = appendShadow(b, l.Shadow)
	}
	if l.Approval != nil {
		b = append(b, `,"approval":`...)
		b = append(b, ArgumentsJSON(l.Approval)...)
	}
	if l.Elicitations != nil {
		b = append(b, `,"elicitations":`...)
		b = append(b, ArgumentsJSON(l.Elicitations)...)
	}
	if l.PrincipalAttributes != nil {
		b = append(b, `,"principal_attributes":[`...)
		for i, a := range l.PrincipalAttributes {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, a)
		}
		b = append(b, ']')
	}
	b = append(b, `,"prev":`...)
	b = appendString(b, l.Prev)
	return append(b, '}')
}

// appendLine appends the whole line, hash included, without the newline.
func (l *Line) appendLine(b []byte) []byte {
	b = l.appendBody(b)
	b = b[:len(b)-1] // the body's closing brace: the hash member goes before it
	b = append(b, `,"hash":`...)
	b = appendString(b, l.Hash)
	return append(b, '}')
}

// appendString writes s as the package doc's canonical string. It is not
// encoding/json's encoder because that one escapes <, >, &, U+2028 and
// U+2029, which a verifier in another language would have to imitate.
func appendString(b []byte, s string) []byte {
	const hexDigits = "0123456789abcdef"
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"':
				b = append(b, `\"`...)
			case c == '\\':
				b = append(b, `\\`...)
			case c == '\n':
				b = append(b, `\n`...)
			case c == '\r':
				b = append(b, `\r`...)
			case c == '\t':
				b = append(b, `\t`...)
			case c < 0x20:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, "\ufffd"...)
		} else {
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}

// appendMillis writes d as exact decimal milliseconds: integer arithmetic,
// not a float, so every nanosecond survives and there is one spelling.
func appendMillis(b []byte, d time.Duration) []byte {
	n := uint64(d)
	if d < 0 {
		b = append(b, '-')
		n = uint64(-(d + 1)) + 1 // -MinInt64 overflows; this does not
	}
	b = strconv.AppendUint(b, n/1e6, 10)
	frac := n % 1e6
	if frac == 0 {
		return b
	}
	digits := strconv.FormatUint(frac+1e6, 10)[1:] // six digits, leading zeros kept
	return append(append(b, '.'), strings.TrimRight(digits, "0")...)
}

// parseMillis reads a duration_ms number exactly. It accepts more spellings
// than appendMillis writes; the canonical check rejects those.
func parseMillis(s string) (time.Duration, error) {
	neg := strings.HasPrefix(s, "-")
	whole, frac, _ := strings.Cut(strings.TrimPrefix(s, "-"), ".")
	if whole == "" || strings.Trim(whole, "0123456789") != "" || strings.Trim(frac, "0123456789") != "" {
		return 0, fmt.Errorf("duration_ms %s is not a plain decimal number", s)
	}
	if len(frac) > 6 {
		return 0, fmt.Errorf("duration_ms %s has more than 6 fraction digits", s)
	}
	ms, err := strconv.ParseUint(whole, 10, 64)
	if err != nil || ms > (1<<63)/1_000_000 {
		return 0, fmt.Errorf("duration_ms %s is out of range", s)
	}
	ns := ms * 1e6
	if frac != "" {
		f, _ := strconv.ParseUint(frac+strings.Repeat("0", 6-len(frac)), 10, 64)
		ns += f
	}
	switch {
	case neg && ns == 1<<63:
		return time.Duration(math.MinInt64), nil
	case ns >= 1<<63:
		return 0, fmt.Errorf("duration_ms %s is out of range", s)
	case neg:
		return -time.Duration(ns), nil
	}
	return time.Duration(ns), nil
}

// lineJSON is a line as encoding/json reads it; ParseLine turns it into a
// Line.
type lineJSON struct {
	Seq          uint64          `json:"seq"`
	Time         string          `json:"time"`
	ID           string          `json:"id"`
	Caller       string          `json:"caller"`
	Principal    string          `json:"principal"`
	PKind        string          `json:"principal_kind"`
	Tool         string          `json:"tool"`
	OK           bool            `json:"ok"`
	Code         string          `json:"code"`
	DecidedBy    string          `json:"decided_by"`
	DurationMS   json.Number     `json:"duration_ms"`
	ArgsSHA256   string          `json:"args_sha256"`
	Arguments    json.RawMessage `json:"arguments"`
	Shadow       []Shadow        `json:"shadow"`
	Approval     json.RawMessage `json:"approval"`
	Elicitations json.RawMessage `json:"elicitations"`
	PAttrs       []string        `json:"principal_attributes"`
	Prev         string          `json:"prev"`
	Hash         string          `json:"hash"`
}

// ParseLine reads one line (without its newline) and checks that it is in
// canonical form; it does not check the chain (Verify does).
func ParseLine(text []byte) (Line, error) {
	var lj lineJSON
	dec := json.NewDecoder(bytes.NewReader(text))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&lj); err != nil {
		return Line{}, fmt.Errorf("bad JSON: %v", err)
	}
	if rest := bytes.TrimSpace(text[dec.InputOffset():]); len(rest) > 0 {
		return Line{}, errors.New("bad JSON: data after the object")
	}
	t, err := time.Parse(time.RFC3339Nano, lj.Time)
	if err != nil {
		return Line{}, fmt.Errorf("bad time %q", lj.Time)
	}
	d, err := parseMillis(lj.DurationMS.String())
	if err != nil {
		return Line{}, err
	}
	l := Line{
		Seq: lj.Seq, Time: t, ID: lj.ID, Caller: lj.Caller, Principal: lj.Principal, PrincipalKind: lj.PKind, Tool: lj.Tool, OK: lj.OK,
		Code: lj.Code, DecidedBy: lj.DecidedBy, Duration: d, ArgsSHA256: lj.ArgsSHA256,
		Arguments: lj.Arguments, Shadow: lj.Shadow, Approval: lj.Approval, Elicitations: lj.Elicitations, PrincipalAttributes: lj.PAttrs, Prev: lj.Prev, Hash: lj.Hash,
	}
	// Re-encoding catches everything the decoder forgives: a key in another
	// case, a duplicate or missing member, an escape that means the same
	// character, space, a number or time spelled differently.
	if canon := l.appendLine(nil); !bytes.Equal(canon, text) {
		return Line{}, fmt.Errorf("not in canonical form from byte %d", firstDiff(canon, text)+1)
	}
	if !isHash(l.Prev) {
		return Line{}, errors.New("prev is not 64 lowercase hex digits")
	}
	if !isHash(l.Hash) {
		return Line{}, errors.New("hash is not 64 lowercase hex digits")
	}
	return l, nil
}

func firstDiff(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func isHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := range len(s) {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
