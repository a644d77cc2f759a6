package remote

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The stderr tail kept per plugin process: the last tailLines lines, no more
// than tailBytes in all, each line cut at tailLineBytes.
const (
	tailLines     = 20
	tailBytes     = 4 << 10
	tailLineBytes = 512
)

// stderrTail is the io.Writer go-plugin copies a plugin process's raw stderr
// to (ClientConfig.Stderr, besides relaying each line to the logger). It
// keeps only the last lines, so that a crash can be explained in status.
//
// Lines are kept as a terminal can show them: a JSON line of an hclog
// logger (the SDK's, and go-plugin's in the plugin) as the host's log shows
// it, control characters removed, invalid UTF-8 replaced, blank lines
// dropped.
type stderrTail struct {
	mu      sync.Mutex
	lines   []string // oldest first
	size    int      // bytes in lines
	partial []byte   // the line being written, at most tailBytes
	cut     bool     // the line being written was longer than partial
	// panicked is the first "panic: " or "fatal error: " line of a Go
	// process, kept when its stack pushes it out of lines: it, not the
	// last stack frame, says why the process died.
	panicked string
}

func (t *stderrTail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	for len(p) > 0 {
		chunk, rest, eol := bytes.Cut(p, []byte{'\n'})
		if room := tailBytes - len(t.partial); len(chunk) > room {
			chunk, t.cut = chunk[:room], true
		}
		t.partial = append(t.partial, chunk...)
		if !eol {
			break
		}
		t.push(finishLine(t.partial, t.cut))
		t.partial, t.cut = t.partial[:0], false
		p = rest
	}
	return n, nil
}

// push adds a line, dropping the oldest to stay within the bounds.
func (t *stderrTail) push(line string) {
	// Debug and trace lines are go-plugin's plumbing (the handshake, the
	// connection): they would crowd out the lines that say why it died,
	// and the host's own log has them.
	if line == "" || strings.HasPrefix(line, "[DEBUG] ") || strings.HasPrefix(line, "[TRACE] ") {
		return
	}
	if t.panicked == "" && (strings.HasPrefix(line, "panic: ") || strings.HasPrefix(line, "fatal error: ")) {
		t.panicked = line
	}
	t.lines = append(t.lines, line)
	t.size += len(line)
	for len(t.lines) > tailLines || t.size > tailBytes {
		t.size -= len(t.lines[0])
		t.lines = slices.Delete(t.lines, 0, 1)
	}
}

// Lines returns the kept lines, oldest first, with a line still being
// written (one the process has not ended yet) last.
func (t *stderrTail) Lines() []string {
	if t == nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := slices.Clone(t.lines)
	if last := finishLine(t.partial, t.cut); last != "" {
		out = append(out, last)
		if len(out) > tailLines {
			out = out[1:]
		}
	}
	return out
}

// finishLine makes a line of stderr printable: an hclog JSON line rendered,
// control characters (tab aside) removed, invalid UTF-8 replaced, trailing
// space trimmed, and the line cut at tailLineBytes, "…" marking a cut.
func finishLine(b []byte, cut bool) string {
	s, ok := "", false
	if !cut {
		s, ok = hclogLine(b)
	}
	if !ok {
		s = string(b)
	}
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if r != '\t' && unicode.IsControl(r) {
			return -1
		}
		return r
	}, s)
	if len(s) > tailLineBytes {
		i := tailLineBytes
		for i > 0 && !utf8.RuneStart(s[i]) {
			i--
		}
		s, cut = s[:i], true
	}
	s = strings.TrimRightFunc(s, unicode.IsSpace)
	if s != "" && cut {
		s += "…"
	}
	return s
}

// hclogLine renders a JSON line of an hclog logger as the host's log shows
// it: "[DEBUG] message: key=value ...", without the timestamp and module.
func hclogLine(b []byte) (string, bool) {
	if len(b) == 0 || b[0] != '{' {
		return "", false
	}
	var m map[string]any
	if json.Unmarshal(b, &m) != nil {
		return "", false
	}
	msg, ok := m["@message"].(string)
	if !ok {
		return "", false
	}
	var sb strings.Builder
	if level, _ := m["@level"].(string); level != "" {
		sb.WriteString("[" + strings.ToUpper(level) + "] ")
	}
	sb.WriteString(msg)
	keys := make([]string, 0, len(m))
	for k := range m {
		if !strings.HasPrefix(k, "@") {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i == 0 {
			sb.WriteString(":")
		}
		sb.WriteString(" " + k + "=" + logValue(m[k]))
	}
	return sb.String(), true
}

func logValue(v any) string {
	if s, ok := v.(string); ok {
		if s == "" || strings.ContainsAny(s, " \t\"=") {
			return strconv.Quote(s)
		}
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}

// Telling is the line that best says why the process ended: a Go panic's
// first line when there was one, else the last line.
func (t *stderrTail) Telling() string {
	if t == nil {
		return ""
	}
	lines := t.Lines()
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.panicked != "" {
		return t.panicked
	}
	if n := len(lines); n > 0 {
		return lines[n-1]
	}
	return ""
}
