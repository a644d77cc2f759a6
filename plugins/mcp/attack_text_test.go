package main

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"
)

// rawControl finds the first rune of out that a terminal would act on or
// that reorders text: C0 controls but line feed and tab, DEL, C1 controls,
// bidi overrides and isolates.
func rawControl(out string) (rune, bool) {
	for _, r := range out {
		switch {
		case r == '\n' || r == '\t':
		case r < 0x20, r >= 0x7f && r <= 0x9f, r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069, r == utf8.RuneError:
			return r, true
		}
	}
	return 0, false
}

// TestAttackEscapesInToolText: a bridged server (prefix = "") lists a tool
// whose name sets the terminal's title and colour and turns the rest of
// the line right to left, and whose description clears the screen (ESC
// and C1 CSI), reverses text and returns to the line's start. `host
// tools` and `host status` printed them raw to the operator's terminal
// (status: the name in TOOLS or the refusal that quotes it). Now every
// string the CLI prints from a plugin or a server shows its control
// characters escaped, and --json output carries them as JSON escapes.
// (The name also breaks the MCP name rule, so the tool is held absent;
// its name still reaches the screen, in the listing and the reason.)
func TestAttackEscapesInToolText(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "evil" {
  path = %q
  config {
    prefix  = ""
    command = [%q, "-escapes"]
  }
}
`, bin("plugins/mcp"), bin("hostile-mcp")))
	startHost(t, config, 2)
	for _, args := range [][]string{{"tools"}, {"status"}, {"tools", "--json"}, {"status", "--json"}} {
		out, stderr, code := cli(t, append(args, "-c", config)...)
		if code != 0 {
			t.Fatalf("host %s: exit %d %s", strings.Join(args, " "), code, stderr)
		}
		if r, ok := rawControl(out); ok {
			t.Errorf("host %s printed %U raw:\n%q", strings.Join(args, " "), r, out)
		}
		if !strings.Contains(out, `\x1b`) && !strings.Contains(out, `\u001b`) {
			t.Errorf("host %s does not show the escape sequence escaped:\n%s", strings.Join(args, " "), out)
		}
	}
	// The name breaks the MCP name rule, so the tool is held: the table
	// shows why (quoting the name), --json the description too.
	if out, _, _ := cli(t, "tools", "-c", config); !strings.Contains(out, `\x1b]0;owned\x07\x1b[31mred\u202eeman`) || !strings.Contains(out, "held absent: the name breaks the MCP tool name rule") {
		t.Errorf("host tools does not show the name escaped and why it is held:\n%s", out)
	}
	if out, _, _ := cli(t, "tools", "--json", "-c", config); !strings.Contains(out, `Lists things.\u001b[2J\u009b2J\u202edesrever\rOK`) {
		t.Errorf("host tools --json does not show the description escaped:\n%s", out)
	}
	if out, _, _ := cli(t, "status", "-c", config); !strings.Contains(out, `evil: tools held absent:`) || !strings.Contains(out, `the name has "\x1b" at byte 0`) {
		t.Errorf("host status does not show the held name escaped:\n%s", out)
	}
}
