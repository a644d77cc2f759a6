package main

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// What the CLI prints from a plugin or a bridged server (tool names,
// descriptions, errors, a plugin's stderr, a call's result) is not trusted
// to be fit for a terminal: an escape sequence in a tool's name could
// rewrite the screen, move the cursor over a warning or set the window
// title, a carriage return could hide the start of a line, and bidi
// overrides could reorder what is read (Trojan Source, CVE-2021-42574).
// Every printing site passes such text through shown (one line) or
// shownText (a call's result, lines kept); --json output goes through
// jsonShown.

// hidden reports a rune the CLI escapes: C0 and C1 controls, DEL, the
// format characters (bidi controls, zero-width characters, Unicode tags)
// and the line and paragraph separators.
func hidden(r rune) bool {
	switch {
	case r < 0x20, r >= 0x7f && r <= 0x9f:
		return true
	case r < 0x80:
		return false
	case r == '\u2028', r == '\u2029':
		return true
	}
	return unicode.Is(unicode.Cf, r)
}

// shown is s with every hidden rune, line breaks and tabs included,
// written as an escape (\x1b, \u202e), and every byte that is not UTF-8
// as \xNN: safe to print on one line of a terminal.
func shown(s string) string { return escapeHidden(s, false) }

// shownText is shown keeping line feeds and tabs: for a call's text
// result, printed as the lines it has.
func shownText(s string) string { return escapeHidden(s, true) }

func escapeHidden(s string, keepLines bool) string {
	clean := true
	for i, r := range s {
		if hidden(r) && !(keepLines && (r == '\n' || r == '\t')) || r == utf8.RuneError && isInvalid(s, i) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i, r := range s {
		switch {
		case r == utf8.RuneError && isInvalid(s, i):
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case keepLines && (r == '\n' || r == '\t'), !hidden(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r <= 0xffff:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			fmt.Fprintf(&b, `\U%08x`, r)
		}
	}
	return b.String()
}

// isInvalid reports whether the RuneError at s[i] stands for a byte that
// is not UTF-8 (rather than an encoded U+FFFD).
func isInvalid(s string, i int) bool {
	_, size := utf8.DecodeRuneInString(s[i:])
	return size == 1
}

// jsonShown escapes, in JSON that encoding/json wrote, the hidden runes
// it leaves as they are (DEL, C1 controls, format characters): they can
// only stand inside strings, where \uXXXX is the same value, so the
// document means what it meant.
func jsonShown(b []byte) []byte {
	clean := true
	for _, r := range string(b) {
		if hidden(r) && r >= 0x7f {
			clean = false
			break
		}
	}
	if clean {
		return b
	}
	out := make([]byte, 0, len(b)+32)
	for _, r := range string(b) {
		switch {
		case !hidden(r) || r < 0x7f:
			out = utf8.AppendRune(out, r)
		case r <= 0xffff:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			hi, lo := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, hi, lo)
		}
	}
	return out
}
