package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestToolSearchEndToEnd: through the real binaries, with mcp_tool_search
// on and two API keys (groups eng and support; support denied the write
// tools and the search plugin's tool). Each key's tools/list holds
// search_tools alone; a search ranks the matching tools; support's
// searches never answer a hidden tool, even one named exactly; a tool
// found is callable by name though never listed, and a hidden one stays
// an unknown tool.
func TestToolSearchEndToEnd(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.hcl")
	newKey := func(name string, args ...string) string {
		out, stderr, code := cli(t, append([]string{"key", "add", name, "-f", keysFile}, args...)...)
		if code != 0 || !strings.HasPrefix(out, "pk_") {
			t.Fatalf("host key add %s: exit %d %q %s", name, code, out, stderr)
		}
		return strings.TrimSpace(out)
	}
	keys := map[string]string{
		"eng":     newKey("eng", "--attribute", "group:eng"),
		"support": newKey("support", "--attribute", "group:support"),
	}
	addr := freeLoopbackAddr(t)
	tweaks := deploymentTweaks{
		host: fmt.Sprintf("  mcp = %q\n  mcp_tool_search = true\n  mcp_tool_search_over = 2\n  mcp_auth {\n    keys = %q\n  }\n", addr, keysFile),
		safetyRules: `    deny "support-writes" {
      tools   = ["write_file", "delete_file"]
      callers = ["group:support"]
    }
    deny "support-search" {
      tools   = ["search"]
      callers = ["group:support"]
    }
`,
	}
	config := deploymentFileWith(t, dir, tweaks)
	running := startHost(t, config, len(shippedPlugins))

	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	sessions := map[string]*mcp.ClientSession{}
	for _, who := range []string{"eng", "support"} {
		client := mcp.NewClient(&mcp.Implementation{Name: who + "-agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{keys[who], transport}}}, nil)
		if err != nil {
			t.Fatalf("connect as %s: %v\n%s", who, err, running.stderr)
		}
		defer cs.Close()
		sessions[who] = cs
	}
	search := func(who, args string) []string {
		t.Helper()
		r := mcpCall(t, ctx, sessions[who], "search_tools", args)
		if r.IsError {
			t.Fatalf("%s's search_tools %s: %s", who, args, toolText(r))
		}
		var out struct {
			Tools []struct {
				Name        string          `json:"name"`
				InputSchema json.RawMessage `json:"inputSchema"`
			} `json:"tools"`
		}
		if err := json.Unmarshal([]byte(toolText(r)), &out); err != nil {
			t.Fatalf("%s's search_tools %s answered %s: %v", who, args, toolText(r), err)
		}
		t.Logf("%s: search_tools %s -> %s", who, args, toolText(r))
		names := []string{}
		for _, tl := range out.Tools {
			if len(tl.InputSchema) == 0 {
				t.Fatalf("search_tools answered %s without its inputSchema", tl.Name)
			}
			names = append(names, tl.Name)
		}
		return names
	}
	// Search answers tools only once the plugins have registered them.
	all := func() bool {
		got := search("eng", `{"query":"search write read delete list file dir audit head","limit":50}`)
		for _, tool := range shippedTools {
			if !slices.Contains(got, tool) {
				return false
			}
		}
		return true
	}
	for !all() {
		select {
		case <-ctx.Done():
			t.Fatalf("the shipped tools never became searchable\n%s", running.stderr)
		case <-time.After(50 * time.Millisecond):
		}
	}
	for _, who := range []string{"eng", "support"} {
		res, err := sessions[who].ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list as %s: %v", who, err)
		}
		if len(res.Tools) != 1 || res.Tools[0].Name != "search_tools" || res.CacheScope != "private" {
			b, _ := json.Marshal(res)
			t.Fatalf("%s's tools/list: %s, want search_tools alone, private", who, b)
		}
	}

	if got := search("eng", `{"query":"write a file"}`); len(got) == 0 || got[0] != "write_file" {
		t.Fatalf("eng's search for write a file: %v, want write_file first", got)
	}
	hidden := []string{"write_file", "delete_file", "search"}
	for _, q := range []string{`{"query":"write_file"}`, `{"query":"delete_file"}`, `{"query":"search"}`, `{"query":"file","limit":50}`} {
		got := search("support", q)
		for _, h := range hidden {
			if slices.Contains(got, h) {
				t.Fatalf("support's search %s answered the hidden %s: %v", q, h, got)
			}
		}
	}
	if got := search("support", `{"query":"read file"}`); len(got) == 0 || got[0] != "read_file" {
		t.Fatalf("support's search for read file: %v, want read_file first", got)
	}

	// Found, never listed, callable; hidden, an unknown tool.
	if r := mcpCall(t, ctx, sessions["support"], "read_file", `{"path":"notes.md"}`); r.IsError {
		t.Fatalf("support's call of read_file: %s", toolText(r))
	}
	_, err := sessions["support"].CallTool(ctx, &mcp.CallToolParams{Name: "write_file", Arguments: json.RawMessage(`{"path":"notes.md","content":"x"}`)})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || !strings.Contains(je.Message, "no tool named write_file") {
		t.Fatalf("support's call of the hidden write_file: %v, want the unknown-tool protocol error", err)
	}
}
