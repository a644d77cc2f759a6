// Package transcript reads the console transcripts of the project's
// Markdown pages and compares what a command printed with what the page
// shows, so that a page whose transcript no longer matches the real output
// fails a test (docs/transcripts.md is the user's guide to the syntax).
//
// A transcript is a fenced block whose info string is "console". In it, a
// line starting with "$ " is a command; the lines after it, up to the next
// command, are what it prints (stdout and stderr together). The HTML
// comment on the line before the block says how it runs:
//
//	<!-- transcript: host=config.hcl needs=node -->
//	<!-- transcript: skip="needs an answer at a terminal" -->
//
// Every console block must have one: a block that says nothing is an error,
// so that a new transcript cannot silently go unchecked.
//
// Expected output is compared line by line, with these placeholders:
//   - "…" inside a line matches any text in that line (ids, pids, times,
//     hashes, durations);
//   - a line that is only "…" matches any number of lines, none included;
//   - runs of spaces and tabs count as one space, and trailing space is
//     ignored (tables realign when a pid is one digit longer);
//   - the folder the page runs in is shown as /path/to/plugkit.
package transcript

import (
	"fmt"
	"regexp"
	"strings"
)

// Block is one console block of a page.
type Block struct {
	File string // the page, as given to Parse
	Line int    // the line of its opening fence
	// Options from the transcript comment: host=FILE (a host on that
	// deployment runs, started if it is not), needs=a,b (programs CI
	// installs), skip=REASON (not run; the reason is reported).
	Host  string
	Needs []string
	Skip  string
	Steps []Step
}

// Step is one command and the output the page shows for it.
type Step struct {
	Line    int // the command's line in the page
	Command string
	Want    []string
}

// Background reports whether the page shows the command as started in a
// terminal of its own ("# in one terminal"): it runs until the page ends.
func (s Step) Background() bool {
	return strings.HasSuffix(strings.TrimSpace(s.Command), "# in one terminal")
}

var optionRE = regexp.MustCompile(`(\w+)=("([^"]*)"|\S+)`)

// Parse returns the console blocks of a Markdown page, or an error naming
// file:line for a block without a transcript comment or with an option it
// does not know.
func Parse(file, text string) ([]Block, error) {
	lines := strings.Split(text, "\n")
	var blocks []Block
	for i := 0; i < len(lines); i++ {
		trimmed := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(trimmed, "```") {
			continue
		}
		indent := lines[i][:len(lines[i])-len(strings.TrimLeft(lines[i], " "))]
		info := strings.TrimPrefix(trimmed, "```")
		// Find the closing fence first: a non-console block is skipped whole.
		end := i + 1
		for end < len(lines) && strings.TrimSpace(lines[end]) != "```" {
			end++
		}
		if info != "console" {
			i = end
			continue
		}
		b := Block{File: file, Line: i + 1}
		comment := ""
		if i > 0 {
			comment = strings.TrimSpace(lines[i-1])
		}
		if !strings.HasPrefix(comment, "<!-- transcript:") || !strings.HasSuffix(comment, "-->") {
			return nil, fmt.Errorf("%s:%d: console block without a <!-- transcript: … --> comment on the line before it (say how it runs, or skip=\"why\")", file, i+1)
		}
		opts := strings.TrimSuffix(strings.TrimPrefix(comment, "<!-- transcript:"), "-->")
		for _, m := range optionRE.FindAllStringSubmatch(opts, -1) {
			val := m[2]
			if strings.HasPrefix(val, `"`) {
				val = m[3]
			}
			switch m[1] {
			case "host":
				b.Host = val
			case "needs":
				b.Needs = strings.Split(val, ",")
			case "skip":
				b.Skip = val
			default:
				return nil, fmt.Errorf("%s:%d: unknown transcript option %q (host, needs, skip)", file, i, m[1])
			}
		}
		for j := i + 1; j < end; j++ {
			l := strings.TrimPrefix(lines[j], indent)
			if strings.HasPrefix(l, "$ ") {
				b.Steps = append(b.Steps, Step{Line: j + 1, Command: strings.TrimPrefix(l, "$ ")})
				continue
			}
			if len(b.Steps) == 0 {
				return nil, fmt.Errorf("%s:%d: console block shows output before any command", file, j+1)
			}
			s := &b.Steps[len(b.Steps)-1]
			s.Want = append(s.Want, l)
		}
		for k := range b.Steps {
			s := &b.Steps[k]
			for len(s.Want) > 0 && strings.TrimSpace(s.Want[len(s.Want)-1]) == "" {
				s.Want = s.Want[:len(s.Want)-1]
			}
		}
		blocks = append(blocks, b)
		i = end
	}
	return blocks, nil
}

// Match compares the lines a command printed with the lines a page shows,
// under the placeholders of the package doc. The error names the first
// line that differs.
func Match(want, got []string) error {
	w := normalize(want)
	g := normalize(got)
	if matchFrom(w, g) {
		return nil
	}
	// Find the first line that differs, for the message: the longest prefix
	// of want that matches some prefix of got.
	n := 0
	for k := 1; k <= len(w); k++ {
		ok := false
		for m := 0; m <= len(g); m++ {
			if matchFrom(w[:k], g[:m]) {
				ok = true
				break
			}
		}
		if !ok {
			break
		}
		n = k
	}
	if n < len(w) {
		return fmt.Errorf("output differs at the page's line %d of this command's output:\n  page: %s\n--- got ---\n%s", n+1, w[n], strings.Join(got, "\n"))
	}
	return fmt.Errorf("the command printed more than the page shows:\n--- got ---\n%s", strings.Join(got, "\n"))
}

func normalize(lines []string) []string {
	out := make([]string, 0, len(lines))
	for _, l := range lines {
		out = append(out, strings.Join(strings.Fields(l), " "))
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1]
	}
	return out
}

func matchFrom(w, g []string) bool {
	if len(w) == 0 {
		return len(g) == 0
	}
	if w[0] == "…" || w[0] == "..." {
		for k := 0; k <= len(g); k++ {
			if matchFrom(w[1:], g[k:]) {
				return true
			}
		}
		return false
	}
	if len(g) == 0 || !lineMatches(w[0], g[0]) {
		return false
	}
	return matchFrom(w[1:], g[1:])
}

// lineMatches reports whether one line of output matches one line of the
// page, "…" standing for any text.
func lineMatches(want, got string) bool {
	parts := strings.Split(want, "…")
	if len(parts) == 1 {
		return want == got
	}
	if !strings.HasPrefix(got, parts[0]) {
		return false
	}
	rest := got[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, p := range parts[1 : len(parts)-1] {
		k := strings.Index(rest, p)
		if k < 0 {
			return false
		}
		rest = rest[k+len(p):]
	}
	return strings.HasSuffix(rest, last)
}
