package toolname

import (
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	for _, ok := range []string{"read_file", "a", "A-b.c_9", "files.read", strings.Repeat("x", MaxLen), "..x"} {
		if err := Check(ok); err != nil {
			t.Errorf("Check(%q) = %v, want nil", ok, err)
		}
	}
	for name, want := range map[string]string{
		"":                        "empty",
		strings.Repeat("a", 5000): "5000 bytes long",
		strings.Repeat("x", 129):  "129 bytes long",
		"read_file ":              `" " at byte 9`,
		"r\x00ead":                `"\x00" at byte 1`,
		"../x":                    `"/" at byte 2`,
		"r\u0435ad_file":          `"е" at byte 1`,
		"\x1b]0;owned\x07":        `"\x1b" at byte 0`,
		"..":                      "not allowed",
		"my tool":                 `" " at byte 2`,
		"a\u202eb":                `"\u202e" at byte 1`,
		"tool:other":              `":" at byte 4`,
		"\xff":                    `at byte 0`,
	} {
		err := Check(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Check(%.20q) = %v, want an error with %q", name, err, want)
		}
	}
}

func TestLookalike(t *testing.T) {
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{"read_file", "READ_FILE", true},
		{"read_file", "Read_file", true},
		{"read_file", "read_fiIe", true},
		{"read_file", "read_fi1e", true},
		{"read_file", "Read_FiIe", true},
		{"tool", "t0ol", true},
		{"mail", "rnail", true},
		{"read_file", "read_file", false},
		{"read_file", "write_file", false},
		{"read_file", "read-file", false},
		{"list", "lists", false},
	} {
		if got := Lookalike(c.a, c.b); got != c.want {
			t.Errorf("Lookalike(%q, %q) = %v, want %v", c.a, c.b, got, c.want)
		}
		if got := Lookalike(c.b, c.a); got != c.want {
			t.Errorf("Lookalike(%q, %q) = %v, want %v", c.b, c.a, got, c.want)
		}
	}
}
