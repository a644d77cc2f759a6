// Package toolname is the rule a tool's name follows, shared by the host's
// registry and the plugins that check names before they register them (the
// MCP bridge): the MCP specification's character set, and no two names
// that a person or a model could take for one another.
package toolname

import (
	"fmt"
	"strings"
)

// MaxLen is the longest name, in bytes (the MCP specification: 1 to 128
// characters; the characters allowed are all one byte).
const MaxLen = 128

// Check says what is wrong with name, nil when it follows the rule: 1 to
// MaxLen characters of A-Z, a-z, 0-9, '_', '-' and '.', and not "." or
// ".." (which read as paths). Only ASCII is allowed, so a name cannot hide
// a control character, a space, a bidi override or a letter of another
// script that looks like a Latin one.
func Check(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("the name is empty")
	case len(name) > MaxLen:
		return fmt.Errorf("the name is %d bytes long; at most %d are allowed", len(name), MaxLen)
	case name == "." || name == "..":
		return fmt.Errorf("the name %q is not allowed", name)
	}
	for i := 0; i < len(name); i++ {
		if !allowed(name[i]) {
			// i is a byte offset; the byte may start a longer character.
			return fmt.Errorf("the name has %q at byte %d; only A-Z, a-z, 0-9, '_', '-' and '.' are allowed", firstRune(name[i:]), i)
		}
	}
	return nil
}

func allowed(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
}

func firstRune(s string) string {
	for _, r := range s {
		return string(r)
	}
	return s
}

// Keys are what two names are compared by: names that share a key are
// lookalikes. The first is the name folded to lower case; the second the
// name's skeleton (Unicode TR39) folded to lower case. Within the allowed
// characters, confusables.txt maps only four: '0' to 'O', '1' and 'I' to
// 'l', and 'm' to "rn"; every other script is already refused by Check.
// So read_file, READ_FILE, read_fiIe, read_fi1e and Read_FiIe all share a
// key.
func Keys(name string) [2]string {
	var b strings.Builder
	b.Grow(len(name) + 4)
	for i := 0; i < len(name); i++ {
		switch c := name[i]; c {
		case '0':
			b.WriteByte('o')
		case '1', 'I':
			b.WriteByte('l')
		case 'm', 'M':
			b.WriteString("rn")
		default:
			b.WriteByte(lower(c))
		}
	}
	return [2]string{strings.ToLower(name), b.String()}
}

func lower(c byte) byte {
	if c >= 'A' && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}

// Lookalike reports whether a and b are different names that share a key.
func Lookalike(a, b string) bool {
	if a == b {
		return false
	}
	ka, kb := Keys(a), Keys(b)
	return ka[0] == kb[0] || ka[1] == kb[1]
}
