package transcript

import (
	"strings"
	"testing"
)

func TestMatch(t *testing.T) {
	cases := []struct {
		name      string
		want, got string
		ok        bool
	}{
		{"same", "a b\nc", "a b\nc", true},
		{"spaces collapse", "PLUGIN   STATE\nindex    ACTIVE", "PLUGIN STATE\nindex      ACTIVE  ", true},
		{"ellipsis in a line", "host 0.1.0, pid …, up …", "host 0.1.0, pid 5227, up 4s", true},
		{"ellipsis at both ends", `"id": "…-1", "hash":"…"`, `"id": "0a1ad66d-1", "hash":"0677cd31ff"`, true},
		{"ellipsis needs its fixed text", "pid …, up …", "pid 5227, down 4s", false},
		{"ellipsis line takes lines", "first\n…\nlast", "first\nx\ny\nlast", true},
		{"ellipsis line takes none", "first\n…\nlast", "first\nlast", true},
		{"edited value", `"score": 0.5055080783804469`, `"score": 0.6`, false},
		{"missing line", "a\nb", "a", false},
		{"extra line", "a", "a\nb", false},
		{"trailing blank lines", "a\n\n", "a", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Match(strings.Split(c.want, "\n"), strings.Split(c.got, "\n"))
			if (err == nil) != c.ok {
				t.Errorf("Match(%q, %q) = %v, want ok=%v", c.want, c.got, err, c.ok)
			}
		})
	}
}

func TestParse(t *testing.T) {
	page := "# Page\n\n<!-- transcript: host=config.hcl needs=node,python -->\n```console\n$ bin/host status\nhost 0.1.0, pid …\n\n$ bin/host call nope\nUNKNOWN_TOOL: no tool named nope\n```\n\n" +
		"```hcl\nx = 1\n```\n\n  <!-- transcript: skip=\"needs a terminal\" -->\n  ```console\n  $ bin/host run -c x.hcl     # in one terminal\n  ```\n"
	blocks, err := Parse("p.md", page)
	if err != nil {
		t.Fatal(err)
	}
	if len(blocks) != 2 {
		t.Fatalf("got %d blocks, want 2", len(blocks))
	}
	b := blocks[0]
	if b.Host != "config.hcl" || strings.Join(b.Needs, ",") != "node,python" || b.Line != 4 {
		t.Errorf("first block options: %+v", b)
	}
	if len(b.Steps) != 2 || b.Steps[0].Command != "bin/host status" || strings.Join(b.Steps[0].Want, "|") != "host 0.1.0, pid …" || b.Steps[1].Line != 8 {
		t.Errorf("first block steps: %+v", b.Steps)
	}
	if blocks[1].Skip != "needs a terminal" || !blocks[1].Steps[0].Background() {
		t.Errorf("second block: %+v", blocks[1])
	}
}

func TestParseRefuses(t *testing.T) {
	for name, page := range map[string]string{
		"no comment":     "text\n```console\n$ ls\n```\n",
		"unknown option": "<!-- transcript: hots=config.hcl -->\n```console\n$ ls\n```\n",
		"output first":   "<!-- transcript: -->\n```console\nhello\n$ ls\n```\n",
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Parse("p.md", page); err == nil || !strings.Contains(err.Error(), "p.md:") {
				t.Errorf("Parse = %v, want an error naming p.md:LINE", err)
			}
		})
	}
}
