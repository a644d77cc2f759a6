package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// notePhases notes, per session, the test phase in which each of its
// tools/list_changed notifications arrived.
type notePhases struct {
	mu   sync.Mutex
	now  int
	by   map[string][]int
	wake chan struct{}
}

func (p *notePhases) set(n int) { p.mu.Lock(); p.now = n; p.mu.Unlock() }

func (p *notePhases) note(who string) {
	p.mu.Lock()
	p.by[who] = append(p.by[who], p.now)
	p.mu.Unlock()
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

func (p *notePhases) of(who string) []int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.by[who])
}

func (p *notePhases) waitFor(t *testing.T, ctx context.Context, who string, n int) {
	t.Helper()
	for !slices.Contains(p.of(who), n) {
		select {
		case <-p.wake:
		case <-time.After(50 * time.Millisecond):
		case <-ctx.Done():
			t.Fatalf("%s got no tools/list_changed notification in phase %d (got %v)", who, n, p.of(who))
		}
	}
}

// TestVisibilityPerKeyEndToEnd: through the real binaries, two API keys
// (groups eng and support) and safety rules that deny support the write
// tools, the search plugin's tool and a whole bridged MCP server (the
// hostile test server behind the mcp bridge: its tools, resources and
// prompt). Each key's tools/list over MCP, with the Go SDK's client and
// the TypeScript SDK's, holds exactly the tools shown to it; support's
// call of a hidden tool gets the answer a call of no_such_tool gets, ids
// aside, and so do its reads and gets of the hidden server's resources and
// prompt; search_tools never answers support a hidden tool, even named
// exactly; `host tools --as key:support` lists what support's MCP list
// holds; a reload that hides one more tool from one group tells that
// group's session only; and once the bridged server's plugin is killed,
// support's call of its tool is still answered as one of no_such_tool
// (and audited so), while eng is told it is restarting.
func TestVisibilityPerKeyEndToEnd(t *testing.T) {
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
	const baseRules = `    deny "support-writes" {
      tools   = ["write_file", "delete_file"]
      callers = ["group:support"]
    }
    deny "support-search" {
      tools   = ["search"]
      callers = ["group:support"]
    }
    deny "support-hostile" {
      tools   = ["hostile_*"]
      callers = ["group:support"]
    }
`
	tweaks := deploymentTweaks{
		// Tool search on, over a threshold no list here reaches: the lists
		// are whole, with search_tools first.
		host:        fmt.Sprintf("  mcp = %q\n  mcp_tool_search = true\n  mcp_tool_search_over = 100\n  mcp_auth {\n    keys = %q\n  }\n", addr, keysFile),
		safetyRules: baseRules,
		more:        hostileBridge(t),
	}
	config := deploymentFileWith(t, dir, tweaks)
	running := startHost(t, config, len(shippedPlugins)+1)
	// The bridged tools registered before any session connects: a session
	// that has not listed yet is told of every change.
	for !strings.Contains(func() string { out, _, _ := cli(t, "tools", "-c", config); return out }(), "hostile_echo") {
		select {
		case <-ctx.Done():
			t.Fatalf("the bridged server's tools never came\n%s", running.stderr)
		case <-time.After(100 * time.Millisecond):
		}
	}

	notes := &notePhases{by: map[string][]int{}, wake: make(chan struct{}, 1)}
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	sessions := map[string]*mcp.ClientSession{}
	for _, who := range []string{"eng", "support"} {
		client := mcp.NewClient(&mcp.Implementation{Name: who + "-agent", Version: "1"}, &mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { notes.note(who) },
		})
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp",
			HTTPClient: &http.Client{Transport: bearer{keys[who], transport}}},
			// Sessions (2025-11-25): a 2026-07-28 client has none, and
			// learns of a change of its list from the list's cache hint.
			&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("connect as %s: %v\n%s", who, err, running.stderr)
		}
		defer cs.Close()
		sessions[who] = cs
	}
	list := func(who string) []string {
		t.Helper()
		res, err := sessions[who].ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list as %s: %v", who, err)
		}
		if res.CacheScope != "private" {
			t.Errorf("tools/list as %s: cacheScope %q, want private", who, res.CacheScope)
		}
		var names []string
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		slices.Sort(names)
		return names
	}
	waitTools(t, ctx, sessions["eng"], append(shippedTools, "hostile_echo")...)
	shown := map[string][]string{
		"eng":     {"audit_head", "delete_file", "hostile_delete_everything", "hostile_echo", "list_dir", "read_file", "search", "search_tools", "write_file"},
		"support": {"audit_head", "list_dir", "read_file", "search_tools"},
	}
	for _, who := range []string{"eng", "support"} {
		if got := list(who); !slices.Equal(got, shown[who]) {
			t.Fatalf("%s's tools/list: %v, want %v", who, got, shown[who])
		}
		// The TypeScript SDK's client is shown the same.
		if got := tsToolList(t, ctx, "http://"+addr+"/mcp", keys[who]); !slices.Equal(got, shown[who]) {
			t.Fatalf("%s's tools/list with the TypeScript client: %v, want %v", who, got, shown[who])
		}
	}

	// A hidden tool and a missing one, byte for byte, ids aside.
	answer := func(tool string) string {
		t.Helper()
		_, err := sessions["support"].CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(`{"path":"notes.md","content":"x"}`)})
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			t.Fatalf("support's call of %s: %v, want a protocol error", tool, err)
		}
		b, _ := json.Marshal(je)
		return normalizeAnswer(string(b), tool)
	}
	missing := answer("no_such_tool")
	for _, tool := range []string{"write_file", "hostile_echo", "hostile_delete_everything"} {
		if hidden := answer(tool); hidden != missing || !strings.Contains(hidden, "no tool named TOOL") {
			t.Fatalf("support's call of the hidden %s:\n%s\nof a missing one:\n%s", tool, hidden, missing)
		}
	}
	checkOfferingsHidden(t, ctx, sessions["eng"], sessions["support"])
	// search_tools never answers support a hidden tool, even one named
	// exactly, where eng's search finds it.
	if got := searchNames(t, ctx, sessions["eng"], "hostile_echo"); !slices.Contains(got, "hostile_echo") {
		t.Fatalf("eng's search for hostile_echo: %v", got)
	}
	for _, q := range []string{"hostile_echo", "hostile_delete_everything", "echo", "hostile", "write_file", "delete", "search"} {
		for _, name := range searchNames(t, ctx, sessions["support"], q) {
			if !slices.Contains(shown["support"], name) {
				t.Fatalf("support's search for %q answered the hidden %s", q, name)
			}
		}
	}
	if r := mcpCall(t, ctx, sessions["eng"], "read_file", `{"path":"notes.md"}`); r.IsError {
		t.Fatalf("eng read_file: %s", toolText(r))
	}

	// host tools --as key:support lists what support's MCP list holds.
	out, stderr, code := cli(t, "tools", "-c", config, "--as", "key:support", "--json")
	var ts []admin.Tool
	if code != 0 || json.Unmarshal([]byte(out), &ts) != nil {
		t.Fatalf("host tools --as key:support: exit %d %s%s", code, out, stderr)
	}
	var cliNames []string
	for _, tl := range ts {
		cliNames = append(cliNames, tl.Name)
	}
	slices.Sort(cliNames)
	// search_tools is the MCP front end's own, not a registered tool.
	if want := slices.DeleteFunc(list("support"), func(n string) bool { return n == "search_tools" }); !slices.Equal(cliNames, want) {
		t.Fatalf("host tools --as key:support: %v, MCP lists %v", cliNames, want)
	}

	// Reloads: phase 1 hides list_dir from support, phase 2 read_file from
	// eng, phase 3 read_file from support. Each session's notifications
	// arrive in order, so once its last expected one has, any it should
	// not have had has too.
	reload := func(phase int, rules string) {
		t.Helper()
		notes.set(phase)
		tweaks.safetyRules = baseRules + rules
		deploymentFileWith(t, dir, tweaks)
		if out, stderr, code := cli(t, "reload", "-c", config); code != 0 {
			t.Fatalf("host reload (phase %d): exit %d %s%s", phase, code, out, stderr)
		}
	}
	reload(1, `    deny "support-list" {
      tools   = ["list_dir"]
      callers = ["group:support"]
    }
`)
	notes.waitFor(t, ctx, "support", 1)
	if got := list("support"); !slices.Equal(got, []string{"audit_head", "read_file", "search_tools"}) {
		t.Fatalf("support's tools/list after phase 1: %v", got)
	}
	phase2 := `    deny "support-list" {
      tools   = ["list_dir"]
      callers = ["group:support"]
    }
    deny "eng-read" {
      tools   = ["read_file"]
      callers = ["group:eng"]
    }
`
	reload(2, phase2)
	notes.waitFor(t, ctx, "eng", 2)
	reload(3, phase2+`    deny "support-read" {
      tools   = ["read_file"]
      callers = ["group:support"]
    }
`)
	notes.waitFor(t, ctx, "support", 3)
	if eng, sup := notes.of("eng"), notes.of("support"); !slices.Equal(eng, []int{2}) || !slices.Equal(sup, []int{1, 3}) {
		t.Fatalf("tools/list_changed by phase: eng %v, support %v; want [2] and [1 3]", eng, sup)
	}
	if got := list("support"); !slices.Equal(got, []string{"audit_head", "search_tools"}) {
		t.Fatalf("support's tools/list after phase 3: %v, want [audit_head search_tools]", got)
	}
	if got, want := list("eng"), []string{"audit_head", "delete_file", "hostile_delete_everything", "hostile_echo", "list_dir", "search", "search_tools", "write_file"}; !slices.Equal(got, want) {
		t.Fatalf("eng's tools/list after phase 3: %v, want %v", got, want)
	}

	// The bridged server's plugin killed (it restarts in a minute): eng is
	// told its tool is missing while it restarts; to support it still does
	// not exist, and the audit records support's call so.
	if why := killPlugin(t, ctx, config, "hostile", sessions["eng"], "hostile_echo", `{"message":"x"}`); !strings.Contains(why, "plugin hostile is restarting") {
		t.Fatalf("eng's call of hostile_echo while it restarts: %s", why)
	}
	missing = answer("no_such_tool")
	if hidden := answer("hostile_echo"); hidden != missing {
		t.Fatalf("support's call of the hidden hostile_echo while its plugin restarts:\n%s\nof a missing one:\n%s", hidden, missing)
	}
	checkAuditedUnknown(t, dir, "hostile_echo", "support")
	_ = os.Remove(keysFile)
}

// mcpHidden checks that tool is hidden from the session: its tools/list
// lacks it, and a call of it is refused as a call of a tool that does not
// exist (the protocol error, "no tool named TOOL").
func mcpHidden(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool, args string) {
	t.Helper()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	for _, tl := range res.Tools {
		if tl.Name == tool {
			t.Fatalf("tools/list shows %s, which should be hidden", tool)
		}
	}
	_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	var je *jsonrpc.Error
	if !errors.As(err, &je) || je.Code != jsonrpc.CodeInvalidParams || !strings.Contains(je.Message, "no tool named "+tool) {
		t.Fatalf("call of hidden %s: %v, want the unknown-tool protocol error", tool, err)
	}
}

// TestPythonListenerKeepsToolsShown: a remote listener written in Python,
// whose SDK does not declare the visibility answer, is never asked it and
// hides nothing, even a tool it denies every call of (max_words = -1: any
// text is over the limit). host validate names it among the plugins that
// do not answer.
func TestPythonListenerKeepsToolsShown(t *testing.T) {
	needShippedDeployment(t)
	testenv.NeedPython(t)
	dir := t.TempDir()
	config := pythonDeployment(t, dir, "    max_words = -1\n")
	out, stderr, code := cli(t, "validate", "-c", config)
	if code != 0 || !regexp.MustCompile(`tool visibility: answered by safety; not by .*\bwords\b`).MatchString(out) {
		t.Fatalf("host validate: exit %d\n%s%s", code, out, stderr)
	}
	startHost(t, config, 6)
	if r, _ := callJSON(t, config, "word_count", `{"text":""}`); r.OK || r.Error == nil || r.Error.Code != "DENIED" || r.DecidedBy != "words" {
		t.Fatalf("word_count: %+v, want DENIED by words (its guard denies every call)", r)
	}
	out, stderr, code = cli(t, "tools", "-c", config, "--as", "agent:someone", "--attribute", "group:support", "--json")
	var ts []admin.Tool
	if code != 0 || json.Unmarshal([]byte(out), &ts) != nil {
		t.Fatalf("host tools --as: exit %d %s%s", code, out, stderr)
	}
	if !slices.ContainsFunc(ts, func(tl admin.Tool) bool { return tl.Name == "word_count" }) {
		t.Fatalf("host tools --as lacks word_count, which a listener that cannot answer must not hide: %s", out)
	}
}
