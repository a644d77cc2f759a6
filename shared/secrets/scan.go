// Package secrets finds credentials in text and in JSON values: private
// key blocks, cloud and service tokens (AWS, GitHub, GitLab, Slack, Google,
// Stripe), JWTs and generic key = value assignments of high entropy, with
// the rules of gitleaks' default configuration (rules.go says which and
// under what licence). It reports what kind of credential it found and
// where, and replaces each with a marker naming its kind; it never puts a
// credential in anything it returns but the text it was given.
//
// A scan looks for each rule's keywords first and runs the rule's regular
// expression only on a window around each occurrence, so that text without
// keywords (most text) costs one pass per keyword. A run of base64 that
// decodes to text holding a credential is reported as that kind with
// " (base64)" added, and redacted whole.
//
// It lives in shared/ because two sides use it: the safety plugin, which
// may import nothing of the host, and the host's CLI, which redacts the
// arguments it shows in an approval prompt.
package secrets

import (
	"encoding/base64"
	"math"
	"slices"
	"strings"
	"unicode/utf8"
)

// Finding is one credential in a scanned text.
type Finding struct {
	// Kind names the credential's kind: "private-key", "aws-access-key", …
	Kind string
	// Start and End are the byte offsets of the credential in the text.
	Start, End int
}

// Scanner finds credentials. Its zero value is not usable; make one with
// New. A Scanner is safe for concurrent use.
type Scanner struct {
	allow map[string]bool
}

// New returns a scanner that ignores the credentials listed in allow
// (known fakes, test fixtures): a candidate equal to one of them is not
// reported.
func New(allow []string) *Scanner {
	s := &Scanner{allow: map[string]bool{}}
	for _, a := range allow {
		s.allow[a] = true
	}
	return s
}

// Kinds lists the kinds a scanner can report (without the base64 ones).
func Kinds() []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = r.kind
	}
	return out
}

// Find returns the credentials in text, in order, without overlaps (of two
// overlapping findings the one that starts first, or the longer, is kept).
func (s *Scanner) Find(text string) []Finding {
	found := s.find(text)
	return s.addBase64(text, found)
}

// find runs every rule over text.
func (s *Scanner) find(text string) []Finding {
	hits := keywordHits(text)
	if hits == nil {
		return nil
	}
	var found []Finding
	for i, r := range rules {
		if len(hits[i]) == 0 {
			continue
		}
		for _, w := range r.windows(text, hits[i]) {
			found = append(found, s.match(r, text, w)...)
		}
	}
	return merge(found)
}

// keyword is one keyword of one rule.
type keyword struct {
	rule int
	word string
}

// byFirst indexes every rule's keywords by their first byte, in both
// cases, for keywordHits' single pass.
var byFirst = func() (t [256][]keyword) {
	for i, r := range rules {
		for _, w := range r.keywords {
			c := w[0]
			t[c] = append(t[c], keyword{i, w})
			if 'a' <= c && c <= 'z' {
				t[c-'a'+'A'] = append(t[c-'a'+'A'], keyword{i, w})
			}
		}
	}
	return t
}()

// pairs marks the first two bytes, in lower case, of every keyword: a
// position whose two bytes are not marked starts none.
var pairs = func() (t [1 << 16]bool) {
	for _, r := range rules {
		for _, w := range r.keywords {
			t[int(w[0])<<8|int(w[1])] = true
		}
	}
	return t
}()

func lowerByte(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// keywordHits finds every keyword in text, compared in ASCII lower case,
// in one pass: for each rule (by index), the offsets where one of its
// keywords starts and the keyword's length. It returns nil when there is
// none.
func keywordHits(text string) [][]span {
	var hits [][]span
	for i := 0; i+1 < len(text); i++ {
		if !pairs[int(lowerByte(text[i]))<<8|int(lowerByte(text[i+1]))] {
			continue
		}
		cands := byFirst[text[i]]
		for _, k := range cands {
			if hasPrefixFold(text[i:], k.word) {
				if hits == nil {
					hits = make([][]span, len(rules))
				}
				if p := rules[k.rule].plausible; p == nil || p(text, i, i+len(k.word)) {
					hits[k.rule] = append(hits[k.rule], span{i, i + len(k.word)})
				}
			}
		}
	}
	return hits
}

// hasPrefixFold reports whether s starts with the lower-case word, ASCII
// letters compared in either case.
func hasPrefixFold(s, word string) bool {
	if len(s) < len(word) {
		return false
	}
	for j := 1; j < len(word); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != word[j] {
			return false
		}
	}
	return true
}

// span is a part of the text, [start, end).
type span struct{ start, end int }

// windows returns the merged windows of text around r's keyword hits (in
// text order).
func (r *rule) windows(text string, hits []span) []span {
	out := make([]span, 0, len(hits))
	for _, h := range hits {
		w := window(text, h.start-r.before, h.end+r.after)
		if n := len(out); n > 0 && w.start <= out[n-1].end {
			out[n-1].end = max(out[n-1].end, w.end)
			continue
		}
		out = append(out, w)
	}
	return out
}

// maxWiden bounds how far a window is widened to whole tokens.
const maxWiden = 4 << 10

// window clamps [start, end) to text and widens it to whole tokens, so
// that a rule's word boundaries and end anchors see the real neighbours of
// a match and a long token is never cut into a shorter one that matches.
func window(text string, start, end int) span {
	start, end = max(start, 0), min(end, len(text))
	for n := 0; start > 0 && n < maxWiden && isTokenByte(text[start-1]); n++ {
		start--
	}
	for n := 0; end < len(text) && n < maxWiden && isTokenByte(text[end]); n++ {
		end++
	}
	// One more byte each side, for \b and the rules' end delimiters.
	if start > 0 {
		start--
	}
	if end < len(text) {
		end++
	}
	return span{start, end}
}

func isTokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '_' || c == '-' || c == '.' || c == '/' || c == '+' || c == '=' || c == '\\'
}

// match runs r on one window of text.
func (s *Scanner) match(r *rule, text string, w span) []Finding {
	var out []Finding
	part := text[w.start:w.end]
	for _, m := range r.re.FindAllStringSubmatchIndex(part, -1) {
		start, end := m[0], m[1]
		if len(m) >= 4 && m[2] >= 0 {
			start, end = m[2], m[3]
		}
		secret := part[start:end]
		if s.allow[secret] {
			continue
		}
		if r.entropy > 0 && entropy(secret) <= r.entropy {
			continue
		}
		if r.reject != nil && r.reject(secret, part[m[0]:m[1]], part[m[0]:start]) {
			continue
		}
		out = append(out, Finding{Kind: r.kind, Start: w.start + start, End: w.start + end})
	}
	return out
}

// merge sorts findings and drops those that overlap one kept before.
func merge(found []Finding) []Finding {
	if len(found) < 2 {
		return found
	}
	slices.SortFunc(found, func(a, b Finding) int {
		if a.Start != b.Start {
			return a.Start - b.Start
		}
		return b.End - a.End
	})
	out := found[:1]
	for _, f := range found[1:] {
		if f.Start < out[len(out)-1].End {
			continue
		}
		out = append(out, f)
	}
	return out
}

// minBase64 is the shortest base64 run worth decoding: the base64 of the
// shortest credential the rules find (a 20-character AWS key id) is 28.
const minBase64 = 28

// addBase64 decodes runs of base64 outside found, scans what decodes to
// text, and reports each run that holds a credential.
func (s *Scanner) addBase64(text string, found []Finding) []Finding {
	var extra []Finding
	next := 0 // index in found of the first finding not before i
	for i := 0; i < len(text); {
		if !isBase64Byte(text[i]) {
			i++
			continue
		}
		j := i
		for j < len(text) && isBase64Byte(text[j]) {
			j++
		}
		start, end := i, j
		i = j
		if end-start < minBase64 {
			continue
		}
		for next < len(found) && found[next].End <= start {
			next++
		}
		if next < len(found) && found[next].Start < end {
			continue // overlaps a credential found as it is
		}
		if kind := s.inBase64(text[start:end]); kind != "" {
			extra = append(extra, Finding{Kind: kind + " (base64)", Start: start, End: end})
		}
	}
	if len(extra) == 0 {
		return found
	}
	return merge(append(found, extra...))
}

// inBase64 returns the kind of the first credential in the text that run
// decodes to, or "".
func (s *Scanner) inBase64(run string) string {
	run = strings.TrimRight(run, "=")
	enc := base64.RawStdEncoding
	if strings.ContainsAny(run, "-_") {
		if strings.ContainsAny(run, "+/") {
			return ""
		}
		enc = base64.RawURLEncoding
	}
	if len(run)%4 == 1 {
		return ""
	}
	dec, err := enc.DecodeString(run)
	if err != nil || !utf8.Valid(dec) || !mostlyPrintable(dec) {
		return ""
	}
	// One level only: a credential encoded twice is not looked for.
	if f := s.find(string(dec)); len(f) > 0 {
		return f[0].Kind
	}
	return ""
}

func isBase64Byte(c byte) bool { return base64Bytes[c] }

// base64Bytes marks the bytes of both base64 alphabets and the padding.
var base64Bytes = func() (t [256]bool) {
	for _, c := range []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=-_") {
		t[c] = true
	}
	return t
}()

// mostlyPrintable reports whether b reads as text: binary that happens to
// decode (a hash, a compressed blob) is not scanned.
func mostlyPrintable(b []byte) bool {
	bad := 0
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\r' && c != '\t' || c == 0x7f {
			bad++
		}
	}
	return bad*20 <= len(b)
}

// entropy is the Shannon entropy of s in bits per byte, as gitleaks
// computes it.
func entropy(s string) float64 {
	if s == "" {
		return 0
	}
	var counts [256]int
	for i := 0; i < len(s); i++ {
		counts[s[i]]++
	}
	e, n := 0.0, float64(len(s))
	for _, c := range counts {
		if c > 0 {
			p := float64(c) / n
			e -= p * math.Log2(p)
		}
	}
	return e
}

// Redact returns text with each credential replaced by "[redacted: KIND]",
// and the kinds it replaced, each once, in order of first appearance.
func (s *Scanner) Redact(text string) (string, []string) {
	found := s.Find(text)
	if len(found) == 0 {
		return text, nil
	}
	return redact(text, found), kindsOf(found)
}

// Marker is what a credential of kind is replaced with.
func Marker(kind string) string { return "[redacted: " + kind + "]" }

func redact(text string, found []Finding) string {
	var b strings.Builder
	b.Grow(len(text))
	last := 0
	for _, f := range found {
		b.WriteString(text[last:f.Start])
		b.WriteString(Marker(f.Kind))
		last = f.End
	}
	b.WriteString(text[last:])
	return b.String()
}

func kindsOf(found []Finding) []string {
	var kinds []string
	for _, f := range found {
		if !slices.Contains(kinds, f.Kind) {
			kinds = append(kinds, f.Kind)
		}
	}
	return kinds
}
