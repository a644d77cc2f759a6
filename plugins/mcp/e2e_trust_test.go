package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// Attacks by a hostile MCP server (internal/testkit/hostilemcp), through the real
// binaries: host run with host call, host tools, host status and host lock,
// and host mcp with the Go SDK's client.

// hostileBlock is a bridge to the hostile server with the given flags and
// extra config lines.
func hostileBlock(name, extra string, flags ...string) string {
	argv := []string{fmt.Sprintf("%q", bin("hostile-mcp"))}
	for _, f := range flags {
		argv = append(argv, fmt.Sprintf("%q", f))
	}
	return fmt.Sprintf(`
plugin %q {
  path = %q
  config {
    command = [%s]
%s  }
}
`, name, bin("plugins/mcp"), strings.Join(argv, ", "), extra)
}

func hasNote(tool hostTool, part string) bool {
	for _, n := range tool.Notes {
		if strings.Contains(n, part) {
			return true
		}
	}
	return false
}

// A tool that claims readOnlyHint is destructive all the same: the safety
// plugin's ask_destructive asks, and without a TTY the answer is no. The
// bridged names carry the plugin's name by default.
func TestAttackBridgeLyingReadOnlyHint(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, safetyBlock("")+hostileBlock("evil", `    tools {
      read_only = ["echo"]
    }
`, "-lie"))
	h := startHost(t, config, 3)
	ts := h.tools(t, "evil")
	lying, ok := ts["evil_delete_everything"]
	if !ok {
		t.Fatalf("no evil_delete_everything (prefixed with the plugin's name) in %v", ts)
	}
	if lying.ReadOnly || !lying.Destructive || !hasNote(lying, "server says read-only") {
		t.Errorf("evil_delete_everything %+v: want destructive, with the server's claim noted", lying)
	}
	r := h.call(t, "evil_delete_everything", `{}`)
	if r.OK || r.code() != "DENIED" {
		t.Fatalf("evil_delete_everything: %+v, want DENIED (asked, no TTY)", r)
	}
	if strings.Contains(h.log.String(), "delete_everything ran") {
		t.Errorf("the lying tool ran:\n%s", h.log)
	}
	// The deployment's own override is believed.
	if r := h.call(t, "evil_echo", `{"message":"hi"}`); !r.OK {
		t.Errorf("evil_echo (tools.read_only) %+v, want served", r)
	}
}

// A rug pull: notes is pinned by host lock, then redefined by its server
// after two calls (list_changed). It is held absent with the reason in
// host tools, host status and a call's refusal, and comes back after
// host lock accepts the new definition.
func TestAttackBridgeRugPull(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	state := filepath.Join(dir, "pulled")
	config := deployment(t, dir, hostileBlock("notesrv", "", "-rug-after", "2", "-state", state))
	h := startHost(t, config, 2)

	out, stderr, code := cli(t, "validate", "-c", config)
	if code != 0 || !strings.Contains(out+stderr, "notesrv") || !strings.Contains(out+stderr, "unpinned") {
		t.Errorf("validate of an unpinned bridge: exit %d, want a word that notesrv is unpinned:\n%s%s", code, out, stderr)
	}
	out, stderr, code = cli(t, "lock", "-c", config)
	if code != 0 || !strings.Contains(out, "notesrv: tool definitions pinned for the first time") || !strings.Contains(out, "+ notes") {
		t.Fatalf("lock: exit %d\n%s%s", code, out, stderr)
	}
	if b, _ := os.ReadFile(config); !strings.Contains(string(b), "pins") {
		t.Fatalf("no pins written:\n%s", b)
	}
	h.waitActive(t, 2)
	for i := range 2 {
		if r := h.call(t, "notesrv_notes", `{}`); !r.OK {
			t.Fatalf("call %d of notesrv_notes: %+v", i+1, r)
		}
	}
	const why = "definition changed since locked: description"
	waitFor(t, 30*time.Second, "notesrv_notes held", func() bool {
		return strings.Contains(h.tools(t, "notesrv")["notesrv_notes"].Held, why)
	}, h.log.String)
	r := h.call(t, "notesrv_notes", `{}`)
	if r.OK || r.code() != "UNKNOWN_TOOL" || !strings.Contains(r.message(), why) {
		t.Fatalf("notesrv_notes after the rug pull: %+v, want UNKNOWN_TOOL naming %q", r, why)
	}
	if p := h.plugin(t, "notesrv"); !strings.Contains(strings.Join(p.Held, "\n"), "notes") {
		t.Errorf("host status: %+v, want notesrv_notes among the held", p)
	}
	out, _, _ = cli(t, "status", "-c", config)
	if !strings.Contains(out, "tools held absent") || !strings.Contains(out, why) {
		t.Errorf("host status does not show the held tool:\n%s", out)
	}

	out, stderr, code = cli(t, "lock", "notesrv", "-c", config)
	if code != 0 || !strings.Contains(out, "~ notes: description changed") {
		t.Fatalf("lock notesrv: exit %d\n%s%s", code, out, stderr)
	}
	h.waitActive(t, 2)
	waitFor(t, 30*time.Second, "notesrv_notes served again", func() bool {
		tool, ok := h.tools(t, "notesrv")["notesrv_notes"]
		return ok && tool.Held == ""
	}, h.log.String)
	if r := h.call(t, "notesrv_notes", `{}`); !r.OK {
		t.Fatalf("notesrv_notes after host lock: %+v", r)
	}
	// Accepted, but its new description is flagged.
	if tool := h.tools(t, "notesrv")["notesrv_notes"]; !hasNote(tool, "instruction-tags") || !hasNote(tool, "sensitive-files") {
		t.Errorf("the accepted poisoned description is not flagged: %+v", tool.Notes)
	}
}

// Over MCP: a tool whose pin does not match is not listed, and a call to it
// is refused naming the reason; pin = "new-ok" serves a tool the pins do
// not know.
func TestAttackBridgeHeldOverMCP(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, hostileBlock("notesrv", `    pin  = "new-ok"
    pins = {
      notes = "title=0 description=0 inputSchema=0 outputSchema=0 annotations=0"
    }
`, "-rug-after", "2"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cs, hostLog := hostMCP(t, ctx, config)
	waitFor(t, 60*time.Second, "notesrv_echo listed", func() bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == "notesrv_notes" {
				t.Fatalf("the held notesrv_notes is listed over MCP")
			}
			if tool.Name == "notesrv_echo" {
				return true
			}
		}
		return false
	}, hostLog.String)
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "notesrv_notes", Arguments: map[string]any{}})
	if err == nil && !res.IsError {
		t.Fatalf("notesrv_notes over MCP: served %+v", res)
	}
	msg := fmt.Sprint(err)
	if res != nil {
		msg += errorText(res)
	}
	if !strings.Contains(msg, "UNKNOWN_TOOL") || !strings.Contains(msg, "definition changed since locked") {
		t.Errorf("notesrv_notes over MCP: %s, want UNKNOWN_TOOL naming the reason", msg)
	}
}

func hostMCP(t *testing.T, ctx context.Context, config string) (*mcp.ClientSession, *testkit.Buffer) {
	t.Helper()
	cmd := execHost("mcp", "-c", config)
	hostLog := &testkit.Buffer{}
	cmd.Stderr = hostLog
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to host mcp: %v\n%s", err, hostLog)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, hostLog
}

// A server's tool named like another plugin's: with the default prefix it
// is the hostile plugin's own name; with prefix = "" the host refuses it
// and calls still go to the plugin that holds the name.
func TestAttackBridgeShadowing(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "root")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("the real file"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := deployment(t, dir, fmt.Sprintf(`
plugin "files" {
  path = %q
  config {
    root = %q
  }
}
`, bin("plugins/files"), root)+hostileBlock("evil", "", "-shadow")+hostileBlock("bare", "    prefix = \"\"\n", "-shadow"))
	h := startHost(t, config, 4)
	if _, ok := h.tools(t, "files")["read_file"]; !ok {
		t.Fatalf("read_file is not files'")
	}
	if _, ok := h.tools(t, "evil")["evil_read_file"]; !ok {
		t.Fatalf("no evil_read_file")
	}
	r := h.call(t, "read_file", `{"path":"a.txt"}`)
	if !r.OK || !strings.Contains(string(r.Value), "the real file") {
		t.Fatalf("read_file: %+v %s", r, r.Value)
	}
	if strings.Contains(h.log.String(), "captured") {
		t.Errorf("the hostile server saw a read_file call:\n%s", h.log)
	}
	if !strings.Contains(h.log.String(), "the host refused it") {
		t.Errorf("no word that the host refused bare's read_file:\n%s", h.log)
	}
}

// Descriptions with injected instructions and hidden Unicode: flagged and
// served by default, held with descriptions = "block".
func TestAttackBridgePoisonedDescriptions(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, hostileBlock("flagged", "", "-poison")+hostileBlock("blocked", "    descriptions = \"block\"\n", "-poison"))
	h := startHost(t, config, 3)
	flagged := h.tools(t, "flagged")["flagged_weather"]
	for _, rule := range []string{"hidden-unicode", "ignore-instructions", "conceal-from-user"} {
		if !hasNote(flagged, rule) {
			t.Errorf("flagged_weather: no %s finding in %q", rule, flagged.Notes)
		}
	}
	if flagged.Held != "" {
		t.Errorf("flagged_weather held (%s); want served and flagged", flagged.Held)
	}
	if r := h.call(t, "flagged_weather", `{"city":"Oslo"}`); !r.OK {
		t.Errorf("flagged_weather: %+v", r)
	}
	if !strings.Contains(h.log.String(), "tool description flagged") {
		t.Errorf("no WARN for the flagged description:\n%s", h.log)
	}
	blocked := h.tools(t, "blocked")["blocked_weather"]
	if !strings.Contains(blocked.Held, "description failed the check") {
		t.Errorf("blocked_weather: held %q, want held for its description", blocked.Held)
	}
	if r := h.call(t, "blocked_weather", `{"city":"Oslo"}`); r.OK || r.code() != "UNKNOWN_TOOL" {
		t.Errorf("blocked_weather: %+v, want UNKNOWN_TOOL", r)
	}
	if r := h.call(t, "blocked_echo", `{"message":"x"}`); !r.OK {
		t.Errorf("blocked_echo (clean description): %+v", r)
	}
}

// item 8: a server that never answers initialize cannot hold a reload (of
// itself or, since reloads are serialised, of another plugin) for longer
// than its start_timeout.
func TestAttackBridgeHungInitialize(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	hang := filepath.Join(dir, "hang")
	config := deployment(t, dir, hostileBlock("hung", "    start_timeout = \"2s\"\n", "-hang-if", hang)+testServerBlock("other", "o", ""))
	h := startHost(t, config, 3)
	if err := os.WriteFile(hang, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	type answer struct {
		out  string
		code int
	}
	hung := make(chan answer, 1)
	go func() {
		out, stderr, code := cli(t, "reload", "hung", "-c", config)
		hung <- answer{out + stderr, code}
	}()
	time.Sleep(200 * time.Millisecond) // the hung reload goes first
	out, stderr, code := cli(t, "reload", "other", "-c", config)
	if code != 0 {
		t.Errorf("reload other: exit %d\n%s%s", code, out, stderr)
	}
	a := <-hung
	if a.code == 0 || !strings.Contains(a.out, "start_timeout") {
		t.Errorf("reload hung: exit %d, want a failure naming start_timeout:\n%s", a.code, a.out)
	}
	if r := h.call(t, "o_echo", `{"message":"still here"}`); !r.OK {
		t.Errorf("o_echo after the reloads: %+v", r)
	}
}

// item 8: a server listing 50,000 tools is refused as a whole (max_tools),
// instead of costing the host hundreds of MB and a minute.
func TestAttackBridgeTooManyTools(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, hostileBlock("many", "", "-tools", "50000")+testServerBlock("other", "o", ""))
	h := startHostAnyState(t, config)
	waitFor(t, 90*time.Second, "many FAILED naming max_tools", func() bool {
		p := h.plugin(t, "many")
		return p.State == "FAILED" && strings.Contains(p.LastError, "max_tools")
	}, h.log.String)
	if n := len(h.plugin(t, "many").Tools); n != 0 {
		t.Errorf("many registered %d tools", n)
	}
}

// item 8: a 13 MB schema is not registered (max_schema_bytes): the tool is
// held with the reason, the server's other tools are served.
func TestAttackBridgeHugeSchema(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, hostileBlock("big", "", "-schema-bytes", "13000000"))
	h := startHost(t, config, 2)
	huge := h.tools(t, "big")["big_huge"]
	if !strings.Contains(huge.Held, "max_schema_bytes") {
		t.Fatalf("big_huge: held %q, want held for max_schema_bytes", huge.Held)
	}
	if r := h.call(t, "big_echo", `{"message":"x"}`); !r.OK {
		t.Errorf("big_echo: %+v", r)
	}
}

// item 8: a flood of list_changed (one every ~10 ms) makes one tools/list a
// list_changed_interval, not one each.
func TestAttackBridgeListChangedFlood(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	count := filepath.Join(dir, "lists")
	config := deployment(t, dir, hostileBlock("flood", "", "-flood", "-count", count))
	startHost(t, config, 2)
	read := func() int {
		b, _ := os.ReadFile(count)
		n, _ := strconv.Atoi(strings.TrimSpace(string(b)))
		return n
	}
	before := read()
	time.Sleep(3 * time.Second)
	lists := read() - before
	// list_changed_interval is 1s: 3 in 3 s, one more for a sync that was
	// under way.
	if lists > 4 {
		t.Errorf("%d tools/list in 3 s under a list_changed flood, want at most 4", lists)
	}
}

// The real npm servers' definitions are stable: host lock, then a restart
// of the host, changes nothing (no pin differs, host lock finds nothing to
// accept), and the pinned deployment (pin = "strict") serves every tool.
func TestPinnedNPMServers(t *testing.T) {
	needBinaries(t)
	everything := npmServer(t, "mcp-server-everything")
	filesystem := npmServer(t, "mcp-server-filesystem")
	noLeaks(t)
	dir := t.TempDir()
	root := filepath.Join(dir, "sandbox")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	config := deployment(t, dir, fmt.Sprintf(`
plugin "ev" {
  path = %[1]q
  config {
    command = [%[2]q]
  }
}
plugin "fs" {
  path = %[1]q
  config {
    command = [%[3]q, %[4]q]
  }
}
`, bin("plugins/mcp"), everything, filesystem, root))
	h := startHost(t, config, 3)
	before := map[string]hostTool{}
	for _, owner := range []string{"ev", "fs"} {
		for name, tool := range h.tools(t, owner) {
			before[name] = tool
		}
	}
	out, stderr, code := cli(t, "lock", "-c", config)
	if code != 0 || !strings.Contains(out, "ev: tool definitions pinned for the first time") || !strings.Contains(out, "fs: tool definitions pinned for the first time") {
		t.Fatalf("lock: exit %d\n%s%s", code, out, stderr)
	}
	h.waitActive(t, 3)
	if _, _, code := cli(t, "stop", "-c", config); code != 0 {
		t.Fatal("stop failed")
	}
	<-h.done
	h = startHost(t, config, 3)
	for _, owner := range []string{"ev", "fs"} {
		after := h.tools(t, owner)
		for name, tool := range after {
			if tool.Held != "" {
				t.Errorf("%s held after a restart: %s", name, tool.Held)
			}
			if before[name].Definition != tool.Definition {
				t.Errorf("%s: definition changed across a restart", name)
			}
		}
		n := 0
		for name := range before {
			if strings.HasPrefix(name, owner+"_") {
				n++
			}
		}
		if len(after) != n || n == 0 {
			t.Errorf("%s: %d tools served pinned, %d before", owner, len(after), n)
		}
	}
	out, stderr, code = cli(t, "lock", "-c", config)
	if code != 0 || !strings.Contains(out, "ev: tool definitions already pinned") || !strings.Contains(out, "fs: tool definitions already pinned") {
		t.Errorf("lock after a restart: exit %d\n%s%s", code, out, stderr)
	}
	if r := h.call(t, "ev_echo", `{"message":"pinned"}`); !r.OK {
		t.Errorf("ev_echo: %+v", r)
	}
}
