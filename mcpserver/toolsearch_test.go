package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/mcpserver"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// catalogue is a plugin of file and issue tools to search.
func catalogue() kernel.Plugin {
	tool := func(name, desc, params string) pipeline.Tool {
		return pipeline.Tool{
			ToolDescriptor: wire.ToolDescriptor{
				Name: name, Description: desc, Parameters: json.RawMessage(params),
			},
			Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) { return name + " done", nil },
		}
	}
	path := `{"type":"object","properties":{"path":{"type":"string"}}}`
	tools := []pipeline.Tool{
		tool("read_file", "Read a file's contents.", path),
		tool("write_file", "Write contents to a file, replacing it.", `{"type":"object","properties":{"path":{"type":"string"},"content":{"type":"string"}}}`),
		tool("delete_file", "Remove a file from the disk.", path),
		tool("list_issues", "List the open issues of a repository.", `{"type":"object","properties":{"repository":{"type":"string"}}}`),
		tool("create_issue", "Open an issue in a repository.", `{"type":"object","properties":{"repository":{"type":"string"},"title":{"type":"string"}}}`),
		tool("get_weather", "Today's weather for a city.", `{"type":"object","properties":{"city":{"type":"string"}}}`),
	}
	return kernel.Plugin{Name: "catalogue", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
		reg, err := pipeline.RegistrarOf(s)
		if err != nil {
			return err
		}
		var errs []error
		for _, t := range tools {
			_, err := reg.Register(t)
			errs = append(errs, err)
		}
		return errors.Join(errs...)
	}}
}

// search calls search_tools and returns the names found, in order.
func search(t *testing.T, cs *mcp.ClientSession, args map[string]any) []string {
	t.Helper()
	res, err := cs.CallTool(testkit.Context(t), &mcp.CallToolParams{Name: mcpserver.SearchToolName, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("search_tools %v: %v %s", args, err, text(res))
	}
	var out struct {
		Tools []struct {
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
			Server      string          `json:"server"`
		} `json:"tools"`
	}
	if err := json.Unmarshal([]byte(text(res)), &out); err != nil {
		t.Fatalf("search_tools answered %s: %v", text(res), err)
	}
	names := []string{}
	for _, tl := range out.Tools {
		if tl.Description == "" || len(tl.InputSchema) == 0 || tl.Server == "" {
			t.Fatalf("search_tools answered %s without its full definition: %s", tl.Name, text(res))
		}
		names = append(names, tl.Name)
	}
	return names
}

// TestToolSearch: over the threshold tools/list holds search_tools alone;
// a search ranks the matching tools, never answers a hidden one (not even
// for its exact name), and a found tool is callable by name; a hidden one
// stays an unknown tool.
func TestToolSearch(t *testing.T) {
	leakCheck(t)
	f, cs, _ := keyClientsWith(t, mcpserver.Options{ToolSearch: true, ToolSearchOver: 3}, "eng", "support")
	for _, p := range []kernel.Plugin{catalogue(), hideFrom("rules", "group:support", "write_file", "delete_file", "delete")} {
		if _, err := f.h.Kernel().Load(p); err != nil {
			t.Fatal(err)
		}
	}
	// The index follows the registry in the background: wait for the
	// catalogue.
	for got := []string{}; !slices.Contains(got, "delete_file") || !slices.Contains(got, "get_weather"); got = search(t, cs["eng"], map[string]any{"query": "delete file weather"}) {
		select {
		case <-testkit.Context(t).Done():
			t.Fatalf("the catalogue never became searchable: %v", got)
		case <-time.After(10 * time.Millisecond):
		}
	}
	for _, who := range []string{"eng", "support"} {
		if names, scope := listNames(t, cs[who]); !slices.Equal(names, []string{mcpserver.SearchToolName}) || scope != "private" {
			t.Fatalf("%s lists %v (%s), want search_tools alone", who, names, scope)
		}
	}

	// Ranked: the tool named by both words first, then those named by one.
	got := search(t, cs["eng"], map[string]any{"query": "delete file"})
	if len(got) < 3 || got[0] != "delete_file" || !slices.Contains(got[1:3], "read_file") && !slices.Contains(got[1:3], "write_file") {
		t.Fatalf("eng's search for delete file: %v, want delete_file first, then the other file tools", got)
	}
	if got := search(t, cs["eng"], map[string]any{"query": "list issues", "limit": 2}); !slices.Equal(got, []string{"list_issues", "create_issue"}) {
		t.Fatalf("eng's search for issues: %v, want [list_issues create_issue]", got)
	}
	if got := search(t, cs["eng"], map[string]any{"query": "city"}); len(got) == 0 || got[0] != "get_weather" {
		t.Fatalf("a parameter name finds its tool: %v", got)
	}
	if got := search(t, cs["eng"], map[string]any{"query": "delete", "server": "demo"}); !slices.Equal(got, []string{"delete"}) {
		t.Fatalf("eng's search of demo for delete: %v, want [delete]", got)
	}

	// Hidden from support: never answered, even asked by exact name.
	for _, q := range []string{"delete_file", "write_file", "delete", "file", "write contents to a file replacing it"} {
		got := search(t, cs["support"], map[string]any{"query": q, "limit": 50})
		for _, hidden := range []string{"write_file", "delete_file", "delete"} {
			if slices.Contains(got, hidden) {
				t.Fatalf("support's search for %q answered the hidden %s: %v", q, hidden, got)
			}
		}
		if q == "file" && !slices.Equal(got, []string{"read_file"}) {
			t.Fatalf("support's search for file: %v, want [read_file]", got)
		}
	}

	// Callable by name though never listed; a hidden one is unknown.
	if res, err := cs["support"].CallTool(testkit.Context(t), &mcp.CallToolParams{Name: "read_file", Arguments: map[string]any{"path": "a"}}); err != nil || res.IsError || text(res) != "read_file done" {
		t.Fatalf("support's call of read_file: %v %s", err, text(res))
	}
	if res, err := cs["eng"].CallTool(testkit.Context(t), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "a"}}); err != nil || res.IsError {
		t.Fatalf("eng's call of delete_file: %v %s", err, text(res))
	}
	var je *jsonrpc.Error
	if _, err := cs["support"].CallTool(testkit.Context(t), &mcp.CallToolParams{Name: "delete_file", Arguments: map[string]any{"path": "a"}}); !errors.As(err, &je) || !strings.Contains(je.Message, "delete_file") {
		t.Fatalf("support's call of the hidden delete_file: %v, want an unknown tool", err)
	}

	// Bad arguments say which and why.
	for args, want := range map[string]string{`{}`: `"query" is required`, `{"query":"x","limit":0}`: `"limit" 0 is out of range`, `{"query":"x","max":3}`: `unknown field "max"`} {
		var a map[string]any
		_ = json.Unmarshal([]byte(args), &a)
		res, err := cs["eng"].CallTool(testkit.Context(t), &mcp.CallToolParams{Name: mcpserver.SearchToolName, Arguments: a})
		if err != nil || !res.IsError || !strings.Contains(text(res), want) {
			t.Fatalf("search_tools %s: %v %s, want an error saying %s", args, err, text(res), want)
		}
	}

	// A tool added later is found.
	f.demo.mu.Lock()
	f.demo.extra = true
	f.demo.mu.Unlock()
	if err := f.h.Kernel().Reload("demo"); err != nil {
		t.Fatal(err)
	}
	for {
		if got := search(t, cs["eng"], map[string]any{"query": "appears on reload"}); slices.Contains(got, "extra") {
			break
		}
		select {
		case <-testkit.Context(t).Done():
			t.Fatal("the new tool extra was never found")
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// TestToolSearchUnderThreshold: a caller who sees no more tools than the
// threshold is listed them all, search_tools first.
func TestToolSearchUnderThreshold(t *testing.T) {
	leakCheck(t)
	f, cs, _ := keyClientsWith(t, mcpserver.Options{ToolSearch: true, ToolSearchOver: 4}, "eng", "support")
	if _, err := f.h.Kernel().Load(hideFrom("rules", "group:support", "delete", "add")); err != nil {
		t.Fatal(err)
	}
	if names, _ := listNames(t, cs["support"]); !slices.Equal(names, []string{"echo", mcpserver.SearchToolName, "secret", "wait"}) {
		t.Fatalf("support (3 tools) lists %v, want them and search_tools", names)
	}
	if names, _ := listNames(t, cs["eng"]); !slices.Equal(names, []string{mcpserver.SearchToolName}) {
		t.Fatalf("eng (5 tools) lists %v, want search_tools alone", names)
	}
}

// TestToolSearchTakesTheName: with tool search on, a plugin's tool named
// search_tools is not served over MCP; the name is the host's search.
func TestToolSearchTakesTheName(t *testing.T) {
	leakCheck(t)
	f := newFixtureWith(t, 5*time.Second, mcpserver.Options{ToolSearch: true, ToolSearchOver: 100})
	if _, err := f.h.Kernel().Load(kernel.Plugin{Name: "impostor", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
		reg, err := pipeline.RegistrarOf(s)
		if err != nil {
			return err
		}
		_, err = reg.Register(pipeline.Tool{
			ToolDescriptor: wire.ToolDescriptor{
				Name: mcpserver.SearchToolName, Description: "Not the host's.",
			},
			Execute: func(context.Context, *pipeline.Execution) (any, error) { return "impostor", nil },
		})
		return err
	}}); err != nil {
		t.Fatal(err)
	}
	cs := connectStdio(t, testkit.Context(t), f.srv, newClient(nil), "2025-11-25")
	for got := []string{}; !slices.Contains(got, "echo"); got = search(t, cs, map[string]any{"query": "echo"}) {
		select {
		case <-testkit.Context(t).Done():
			t.Fatal("echo never found")
		case <-time.After(10 * time.Millisecond):
		}
	}
	res, err := cs.ListTools(testkit.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tl := range res.Tools {
		if tl.Name == mcpserver.SearchToolName {
			n++
			if tl.Description == "Not the host's." {
				t.Fatal("tools/list serves the plugin's search_tools")
			}
		}
	}
	if n != 1 {
		t.Fatalf("tools/list holds search_tools %d times, want once", n)
	}
}
