package deployment

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mcp_state_key names a file of 32-byte keys, checked where it is named.
func TestParseMCPStateKey(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, content string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.key", "# rotated in: the new key first\n"+strings.Repeat("ab", 32)+"\n\n"+
		"q83vEjRWeJCrze8SNFZ4kKvN7xI0VniQq83vEjRWeJA=\n")
	d := parseClean(t, fmt.Sprintf("host {\n  mcp_state_key = %q\n}\n", good))
	if d.Host.MCPStateKey != good {
		t.Fatalf("MCPStateKey = %q, want %q", d.Host.MCPStateKey, good)
	}
	keys, err := LoadStateKeys(good)
	if err != nil || len(keys) != 2 || keys[0][0] != 0xab || keys[1][0] != 0xab || keys[1][1] != 0xcd {
		t.Fatalf("LoadStateKeys: %x, %v", keys, err)
	}
	for _, c := range []struct{ content, want string }{
		{"", "holds no key"},
		{"# only a comment\n", "holds no key"},
		{strings.Repeat("ab", 16) + "\n", "line 1 holds a key of 16 bytes; want 32"},
		{strings.Repeat("ab", 32) + "\nnot a key\n", "line 2 is not a key written in hex or base64"},
	} {
		path := write("bad.key", c.content)
		_, diags := Parse(writeDeployment(t, fmt.Sprintf("host {\n  mcp_state_key = %q\n}\n", path)))
		if out := Format(diags); !strings.Contains(out, "Invalid mcp_state_key file") || !strings.Contains(out, c.want) {
			t.Errorf("%q:\ndiagnostics:\n%s\nwant %q", c.content, out, c.want)
		}
	}
	_, diags := Parse(writeDeployment(t, "host {\n  mcp_state_key = \"missing.key\"\n}\n"))
	if out := Format(diags); !strings.Contains(out, "Invalid mcp_state_key file") {
		t.Errorf("a missing file:\n%s", out)
	}
}
