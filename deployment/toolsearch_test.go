package deployment

import (
	"strings"
	"testing"
)

// mcp_tool_search turns tool search on; mcp_tool_search_over is its
// threshold, a count, and an error without it.
func TestParseMCPToolSearch(t *testing.T) {
	d := parseClean(t, "host {\n  mcp_tool_search = true\n  mcp_tool_search_over = 40\n}\n")
	if !d.Host.MCPToolSearch || d.Host.MCPToolSearchOver != 40 {
		t.Fatalf("MCPToolSearch, MCPToolSearchOver = %v, %d; want true, 40", d.Host.MCPToolSearch, d.Host.MCPToolSearchOver)
	}
	if d := parseClean(t, "host {\n  mcp_tool_search = true\n}\n"); d.Host.MCPToolSearchOver != 0 {
		t.Fatalf("MCPToolSearchOver defaults to %d, want 0", d.Host.MCPToolSearchOver)
	}
	if d := parseClean(t, "host {\n}\n"); d.Host.MCPToolSearch {
		t.Fatal("tool search is on by default")
	}
	for src, want := range map[string]string{
		"host {\n  mcp_tool_search_over = 10\n}\n":                           "mcp_tool_search_over without mcp_tool_search",
		"host {\n  mcp_tool_search = true\n  mcp_tool_search_over = -1\n}\n": "mcp_tool_search_over must be at least 0",
	} {
		_, diags := Parse(writeDeployment(t, src))
		if out := Format(diags); !strings.Contains(out, want) || !strings.Contains(out, ":3:") && !strings.Contains(out, ":2:") {
			t.Errorf("%q: %s, want an error at the line saying %s", src, out, want)
		}
	}
}
