package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// Helpers of TestVisibilityPerKeyEndToEnd for its bridged server: the
// hostile test MCP server (a tool, resources, a template and a prompt)
// behind the mcp bridge, which a rule hides from support whole.

// hostileBridge builds the bridge and the hostile MCP server (once) and
// returns the plugin block that bridges it as "hostile" (its tools
// hostile_echo and hostile_delete_everything, its resources under
// plugkit://hostile/, its prompt hostile_prompts.greet). Its restarts wait
// a minute, so that a test can see it restarting.
func hostileBridge(t *testing.T) string {
	t.Helper()
	bridge := bins.Build(t, "plugins/mcp", module+"plugins/mcp")
	server := bins.Build(t, "hostile-mcp", module+"internal/testkit/hostilemcp")
	binDir := filepath.Dir(server)
	return fmt.Sprintf(`
plugin "hostile" {
  path = %q
  restart {
    attempts    = 5
    window      = "10m"
    backoff     = "1m"
    max_backoff = "1m"
  }
  config {
    command = [%q, "-lie", "-resources", "-prompt-text", %q]
  }
  sandbox {
    read = [%q]
    exec = [%q]
  }
}
`, bridge, server, filepath.Join(binDir, "no-such-file"), binDir, server)
}

// protocolAnswer is the protocol error err carries, as JSON with name
// replaced by NAME and the call's id and receipt by placeholders.
func protocolAnswer(t *testing.T, err error, name string) string {
	t.Helper()
	var je *jsonrpc.Error
	if !errors.As(err, &je) {
		t.Fatalf("%s: %v, want a protocol error", name, err)
	}
	b, _ := json.Marshal(je)
	return normalizeAnswer(string(b), name)
}

// checkOfferingsHidden: eng lists the bridged server's resources, its
// template and its prompt, support none of them; support's read,
// subscription and get of them get exactly the answers of a server and a
// prompt that do not exist.
func checkOfferingsHidden(t *testing.T, ctx context.Context, eng, support *mcp.ClientSession) {
	t.Helper()
	offered := func(cs *mcp.ClientSession) (uris, prompts []string) {
		lr, err := cs.ListResources(ctx, nil)
		if err != nil {
			t.Fatalf("resources/list: %v", err)
		}
		for _, r := range lr.Resources {
			uris = append(uris, r.URI)
		}
		lt, err := cs.ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatalf("resources/templates/list: %v", err)
		}
		for _, r := range lt.ResourceTemplates {
			uris = append(uris, r.URITemplate)
		}
		lp, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		for _, p := range lp.Prompts {
			prompts = append(prompts, p.Name)
		}
		slices.Sort(uris)
		return uris, prompts
	}
	uris, prompts := offered(eng)
	if want := []string{"plugkit://hostile/hostile://creds", "plugkit://hostile/hostile://item/{id}", "plugkit://hostile/hostile://notes"}; !slices.Equal(uris, want) || !slices.Equal(prompts, []string{"hostile_prompts.greet"}) {
		t.Fatalf("eng is offered %v and prompts %v, want %v and [hostile_prompts.greet]", uris, prompts, want)
	}
	if rr, err := eng.ReadResource(ctx, &mcp.ReadResourceParams{URI: "plugkit://hostile/hostile://notes"}); err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "buy milk" {
		t.Fatalf("eng's read of hostile://notes: %v %+v", err, rr)
	}
	if uris, prompts := offered(support); len(uris) != 0 || len(prompts) != 0 {
		t.Fatalf("support is offered %v and prompts %v, want nothing", uris, prompts)
	}
	read := func(uri string) string {
		_, err := support.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return protocolAnswer(t, err, uri)
	}
	if hidden, missing := read("plugkit://hostile/hostile://notes"), read("plugkit://nobody/hostile://notes"); hidden != missing {
		t.Fatalf("support's read of a hidden server's resource:\n%s\nof a missing server's:\n%s", hidden, missing)
	}
	subscribe := func(uri string) string {
		return protocolAnswer(t, support.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}), uri)
	}
	if hidden, missing := subscribe("plugkit://hostile/hostile://notes"), subscribe("plugkit://nobody/hostile://notes"); hidden != missing {
		t.Fatalf("support's subscription to a hidden server's resource:\n%s\nto a missing server's:\n%s", hidden, missing)
	}
	get := func(name string) string {
		_, err := support.GetPrompt(ctx, &mcp.GetPromptParams{Name: name})
		return protocolAnswer(t, err, name)
	}
	if hidden, missing := get("hostile_prompts.greet"), get("hostile_prompts.nope"); hidden != missing {
		t.Fatalf("support's get of a hidden prompt:\n%s\nof a missing one:\n%s", hidden, missing)
	}
}

// tsToolList is the tools/list the TypeScript SDK's client gets with key
// (it then calls read_file), sorted.
func tsToolList(t *testing.T, ctx context.Context, endpoint, key string) []string {
	t.Helper()
	node, script, ok := tsClient(t)
	if !ok {
		t.Fatal("node and the TypeScript MCP SDK (npm ci in plugins/mcp/testdata/servers) are needed for the TypeScript client's tools/list")
	}
	cmd := exec.CommandContext(ctx, node, script, endpoint, key, "read_file", `{"path":"notes.md"}`)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("TypeScript client: %v\n%s", err, stderr.String())
	}
	var got struct {
		Tools []string `json:"tools"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("TypeScript client's output %q: %v", out, err)
	}
	slices.Sort(got.Tools)
	return got.Tools
}

// searchNames is what search_tools answers session cs for query, by name.
func searchNames(t *testing.T, ctx context.Context, cs *mcp.ClientSession, query string) []string {
	t.Helper()
	r := mcpCall(t, ctx, cs, "search_tools", fmt.Sprintf(`{"query":%q,"limit":50}`, query))
	var res struct {
		Tools []struct {
			Name string `json:"name"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(toolText(r)), &res); r.IsError || err != nil {
		t.Fatalf("search_tools %q: %s (%v)", query, toolText(r), err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	return names
}

// normalizeAnswer is a protocol error's JSON with name replaced by TOOL and
// the call's id and receipt by placeholders.
func normalizeAnswer(s, name string) string {
	s = strings.ReplaceAll(s, name, "TOOL")
	s = regexp.MustCompile(`"plugkit/id":"[^"]*"`).ReplaceAllString(s, `"plugkit/id":"ID"`)
	return regexp.MustCompile(`"plugkit/receipt[^"]*":("[^"]*"|\{[^}]*\}|[0-9]+)`).ReplaceAllString(s, `"plugkit/receipt":"R"`)
}

// killPlugin kills plugin's process (SIGKILL) and waits until a call of
// tool by eng is refused as its plugin restarting, which it returns.
func killPlugin(t *testing.T, ctx context.Context, config, plugin string, eng *mcp.ClientSession, tool, args string) string {
	t.Helper()
	st, err := admin.NewClient(filepath.Join(filepath.Dir(config), "run", "host.sock")).Status(ctx)
	if err != nil {
		t.Fatalf("status: %v", err)
	}
	pid := 0
	for _, p := range st.Plugins {
		if p.Name == plugin {
			pid = p.PID
		}
	}
	if pid == 0 {
		t.Fatalf("no process for %s in %+v", plugin, st.Plugins)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		t.Fatalf("kill %s (%d): %v", plugin, pid, err)
	}
	for {
		r, err := eng.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
		if err == nil && r.IsError && strings.Contains(toolText(r), "restarting") {
			return toolText(r)
		}
		select {
		case <-ctx.Done():
			t.Fatalf("eng's call of %s after %s was killed: %v %v, want it refused as restarting", tool, plugin, err, r)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// checkAuditedUnknown: the audit log records every call of tool by the
// principal who as a call of a tool that does not exist (UNKNOWN_TOOL,
// decided by nobody), and has at least two of them (one while the tool's
// plugin ran, one while it restarted).
func checkAuditedUnknown(t *testing.T, dir, tool, who string) {
	t.Helper()
	n := 0
	if !testkit.Eventually(10*time.Second, func() bool {
		b, err := os.ReadFile(filepath.Join(dir, "run", "audit", "audit.log"))
		if err != nil {
			t.Fatal(err)
		}
		n = 0
		for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			var l struct {
				Tool, Principal, Code string
				DecidedBy             string `json:"decided_by"`
			}
			if json.Unmarshal([]byte(line), &l) != nil || l.Tool != tool || l.Principal != who {
				continue
			}
			if l.Code != "UNKNOWN_TOOL" || l.DecidedBy != "" {
				t.Fatalf("the audit records %s's call of the hidden %s as %s decided by %q, want UNKNOWN_TOOL by nobody: %s", who, tool, l.Code, l.DecidedBy, line)
			}
			n++
		}
		return n >= 2
	}) {
		t.Fatalf("the audit has %d lines of %s's calls of %s, want 2", n, who, tool)
	}
}
