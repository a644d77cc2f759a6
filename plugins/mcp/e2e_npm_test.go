package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The bridge against the npm servers, through `host run` and `host call`.

// serverTools lists a server's tools with the Go SDK's client directly,
// waiting until the list has settled (servers may add tools right after
// the handshake).
func serverTools(t *testing.T, argv ...string) []*mcp.Tool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	// The capabilities the bridge declares: a server may list some tools
	// only to clients that can answer elicitation.
	client := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "decline"}, nil
		},
		Capabilities: &mcp.ClientCapabilities{
			//lint:ignore SA1019 the bridge declares roots, so the direct client does too
			RootsV2:     &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		},
	})
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(argv[0], argv[1:]...)}, nil)
	if err != nil {
		t.Fatalf("connect to %v: %v", argv, err)
	}
	defer cs.Close()
	var tools []*mcp.Tool
	for range 3 {
		time.Sleep(500 * time.Millisecond)
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		tools = res.Tools
	}
	return tools
}

// hostTool is `host tools --json`'s row.
type hostTool struct {
	Name        string          `json:"name"`
	Owner       string          `json:"owner"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Destructive bool            `json:"destructive"`
	ReadOnly    bool            `json:"read_only"`
	Idempotent  bool            `json:"idempotent"`
	Timeout     string          `json:"timeout"`
	Notes       []string        `json:"notes"`
	Held        string          `json:"held"`
	Definition  string          `json:"definition"`
	Kind        string          `json:"kind"`
}

// tools are owner's tools as host tools lists them, without the entries
// for resources and prompts (entries).
func (h *hostRun) tools(t testing.TB, owner string) map[string]hostTool {
	t.Helper()
	m := h.entries(t, owner)
	for name, tool := range m {
		if tool.Kind != "" {
			delete(m, name)
		}
	}
	return m
}

// entries are all that owner registered: tools, and entries of a kind.
func (h *hostRun) entries(t testing.TB, owner string) map[string]hostTool {
	t.Helper()
	out, stderr, code := cli(t, "tools", "--json", "-c", h.config)
	if code != 0 {
		t.Fatalf("host tools: exit %d %s", code, stderr)
	}
	var all []hostTool
	if err := json.Unmarshal([]byte(out), &all); err != nil {
		t.Fatal(err)
	}
	m := map[string]hostTool{}
	for _, tool := range all {
		if tool.Owner == owner {
			m[tool.Name] = tool
		}
	}
	return m
}

// sameJSON compares two JSON texts by value.
func sameJSON(t testing.TB, a, b []byte) bool {
	t.Helper()
	var x, y any
	if err := json.Unmarshal(a, &x); err != nil {
		t.Fatalf("%s: %v", a, err)
	}
	if err := json.Unmarshal(b, &y); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	return reflect.DeepEqual(x, y)
}

// checkSameTools checks that the host has a tool for each of the server's,
// with the same description, schema and hints (MCP's defaults applied).
func checkSameTools(t *testing.T, h *hostRun, owner, prefix string, server []*mcp.Tool) {
	t.Helper()
	var got map[string]hostTool
	waitFor(t, 30*time.Second, "the bridged list to match the server's", func() bool {
		got = h.tools(t, owner)
		return len(got) == len(server)
	}, func() string { return fmt.Sprintf("host has %d tools, server %d", len(got), len(server)) })
	for _, st := range server {
		ht, ok := got[prefix+st.Name]
		if !ok {
			t.Errorf("server tool %s is not bridged as %s%s", st.Name, prefix, st.Name)
			continue
		}
		if ht.Description != st.Description {
			t.Errorf("%s: description %q, server says %q", ht.Name, ht.Description, st.Description)
		}
		schema, _ := json.Marshal(st.InputSchema)
		if !sameJSON(t, ht.Parameters, schema) {
			t.Errorf("%s: parameters %s, server's inputSchema %s", ht.Name, ht.Parameters, schema)
		}
		readOnly, destructive, idempotent := false, true, false
		if a := st.Annotations; a != nil {
			readOnly, idempotent = a.ReadOnlyHint, a.IdempotentHint
			destructive = !readOnly && (a.DestructiveHint == nil || *a.DestructiveHint)
		}
		if ht.ReadOnly != readOnly || ht.Destructive != destructive || ht.Idempotent != idempotent {
			t.Errorf("%s: hints read-only %v destructive %v idempotent %v, server's annotations %+v",
				ht.Name, ht.ReadOnly, ht.Destructive, ht.Idempotent, st.Annotations)
		}
	}
}

func TestEverythingServer(t *testing.T) {
	needBinaries(t)
	server := npmServer(t, "mcp-server-everything")
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "everything" {
  path = %q
  config {
    command = [%q]
    env     = { GREETING = "hello" }
    prefix  = "ev"
    trust_hints = true
    timeout = "3s"
  }
}
`, bin("plugins/mcp"), server))
	h := startHost(t, config, 2)
	var ids []string
	call := func(tool, args string) callResult {
		r := h.call(t, tool, args)
		ids = append(ids, r.ID)
		return r
	}

	t.Run("tools/list equals the server's", func(t *testing.T) {
		checkSameTools(t, h, "everything", "ev_", serverTools(t, server))
	})
	t.Run("echo", func(t *testing.T) {
		r := call("ev_echo", `{"message":"hi"}`)
		if !r.OK || !sameJSON(t, r.Value, []byte(`{"content":[{"type":"text","text":"Echo: hi"}]}`)) {
			t.Fatalf("ev_echo: %+v %s", r, r.Value)
		}
	})
	t.Run("structuredContent", func(t *testing.T) {
		r := call("ev_get-structured-content", `{"location":"Chicago"}`)
		var v struct {
			StructuredContent map[string]any `json:"structuredContent"`
		}
		if !r.OK || json.Unmarshal(r.Value, &v) != nil || v.StructuredContent["temperature"] == nil {
			t.Fatalf("ev_get-structured-content: %+v %s", r, r.Value)
		}
	})
	t.Run("the server's environment is what the block declares", func(t *testing.T) {
		r := call("ev_get-env", `{}`)
		var env map[string]string
		if !r.OK || json.Unmarshal([]byte(text(t, r.Value)), &env) != nil {
			t.Fatalf("ev_get-env: %+v %s", r, r.Value)
		}
		keys := slices.Sorted(func(yield func(string) bool) {
			for k := range env {
				if !yield(k) {
					return
				}
			}
		})
		if !slices.Equal(keys, []string{"GREETING", "HOME", "PATH"}) || env["GREETING"] != "hello" {
			t.Errorf("server environment %v", env)
		}
	})
	t.Run("invalid arguments", func(t *testing.T) {
		r := call("ev_get-sum", `{"a":"one","b":2}`)
		if r.code() != "INVALID_ARGUMENTS" || !strings.Contains(r.message(), "/a") {
			t.Fatalf("ev_get-sum: %+v", r)
		}
	})
	t.Run("timeout", func(t *testing.T) {
		r := call("ev_trigger-long-running-operation", `{"duration":30,"steps":3}`)
		if r.code() != "TOOL_TIMEOUT" || !strings.Contains(r.message(), "exceeded 3s") {
			t.Fatalf("long-running operation: %+v", r)
		}
	})
	t.Run("stderr is relayed under the plugin's name", func(t *testing.T) {
		waitFor(t, 10*time.Second, "the server's start-up line in the host's log", func() bool {
			for _, line := range strings.Split(h.log.String(), "\n") {
				if strings.Contains(line, "host.everything") && strings.Contains(line, "Starting default (STDIO) server") {
					return true
				}
			}
			return false
		}, h.log.String)
	})
	t.Run("kill -9 of the server", func(t *testing.T) {
		plugin := h.plugin(t, "everything")
		node := serverProcesses(plugin.PID)
		if len(node) != 1 {
			t.Fatalf("want one server process below the plugin (pid %d), found %v", plugin.PID, node)
		}
		// A call in flight when the server dies fails at once, naming why.
		inflight := make(chan callResult, 1)
		go func() { inflight <- h.call(t, "ev_trigger-long-running-operation", `{"duration":2.5,"steps":1}`) }()
		time.Sleep(time.Second)
		if err := syscallKill(node[0]); err != nil {
			t.Fatal(err)
		}
		r := <-inflight
		ids = append(ids, r.ID)
		if r.code() != "TOOL_ERROR" || !strings.Contains(r.message(), "went away") || !strings.Contains(r.message(), "signal: killed") {
			t.Errorf("the call in flight: %+v", r)
		}
		// Calls fail at once, with a TOOL_ERROR that says why, until the
		// host has restarted the plugin and the server: the bridge says its
		// server went away, the host that the plugin is restarting, or, in
		// the moment between the plugin's exit and the host noticing it,
		// that the plugin's process exited or its call stream was cut.
		r = call("ev_echo", `{"message":"after"}`)
		if r.OK {
			// The restart can beat a slow test; then it already serves.
			t.Logf("the bridge was back before the first call: %s", r.Value)
		} else if r.code() != "TOOL_ERROR" || !saysGone(r.message()) {
			t.Fatalf("call right after the kill: %+v", r)
		}
		waitFor(t, 60*time.Second, "the bridge to serve again", func() bool {
			r := call("ev_echo", `{"message":"again"}`)
			return r.OK && text(t, r.Value) == "Echo: again"
		}, h.log.String)
		if p := h.plugin(t, "everything"); p.PID == plugin.PID {
			t.Errorf("the plugin was not restarted: pid %d", p.PID)
		}
	})
	t.Run("every call is one audit line", func(t *testing.T) {
		waitAudit(t, dir, ids)
	})
}

func TestFilesystemServer(t *testing.T) {
	needBinaries(t)
	server := npmServer(t, "mcp-server-filesystem")
	noLeaks(t)
	dir := t.TempDir()
	sandbox := filepath.Join(dir, "sandbox")
	if err := os.MkdirAll(sandbox, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sandbox, "notes.md"), []byte("first notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := deployment(t, dir, fmt.Sprintf(`
plugin "fs" {
  path = %q
  config {
    command = [%q, "sandbox"]
    prefix  = "fs"
    trust_hints = true
  }
}
`, bin("plugins/mcp"), server)+safetyBlock(`
    deny "no-secrets" {
      tools   = ["fs_*"]
      pattern = ["(?i)secret"]
      reason  = "secrets are off limits"
    }`))
	h := startHost(t, config, 3)
	var ids []string
	call := func(tool, args string) callResult {
		r := h.call(t, tool, args)
		ids = append(ids, r.ID)
		return r
	}
	path := func(name string) string { return filepath.Join(sandbox, name) }
	pathArg := func(name string) string { b, _ := json.Marshal(path(name)); return string(b) }

	t.Run("tools/list equals the server's", func(t *testing.T) {
		checkSameTools(t, h, "fs", "fs_", serverTools(t, server, sandbox))
	})
	t.Run("read inside the allowed folder", func(t *testing.T) {
		r := call("fs_read_text_file", `{"path":`+pathArg("notes.md")+`}`)
		if !r.OK || text(t, r.Value) != "first notes\n" {
			t.Fatalf("read notes.md: %+v %s", r, r.Value)
		}
	})
	t.Run("denied before the server sees it", func(t *testing.T) {
		// The canary: creating a folder is not destructive, so the only
		// thing between the call and the server is the safety rule. The
		// same call with another name shows the server would have made it.
		r := call("fs_create_directory", `{"path":`+pathArg("secret-plans")+`}`)
		if r.code() != "DENIED" || r.DecidedBy != "safety" || !strings.Contains(r.message(), "no-secrets") {
			t.Fatalf("create secret-plans: %+v", r)
		}
		if _, err := os.Stat(path("secret-plans")); !os.IsNotExist(err) {
			t.Fatalf("the server made the denied folder: %v", err)
		}
		r = call("fs_create_directory", `{"path":`+pathArg("plans")+`}`)
		if !r.OK {
			t.Fatalf("create plans: %+v", r)
		}
		if fi, err := os.Stat(path("plans")); err != nil || !fi.IsDir() {
			t.Fatalf("the allowed folder was not made: %v", err)
		}
	})
	t.Run("a destructive tool is asked", func(t *testing.T) {
		r := call("fs_write_file", `{"path":`+pathArg("new.md")+`,"content":"x"}`)
		if r.code() != "DENIED" || !strings.Contains(r.message(), "approv") {
			t.Fatalf("write_file without anyone to ask: %+v", r)
		}
		if _, err := os.Stat(path("new.md")); !os.IsNotExist(err) {
			t.Fatalf("the file was written: %v", err)
		}
	})
	t.Run("isError is TOOL_ERROR with the server's text", func(t *testing.T) {
		r := call("fs_read_text_file", `{"path":`+pathArg("missing.md")+`}`)
		if r.code() != "TOOL_ERROR" || !strings.Contains(r.message(), "ENOENT") {
			t.Fatalf("read missing.md: %+v", r)
		}
	})
	t.Run("invalid arguments", func(t *testing.T) {
		r := call("fs_read_text_file", `{"path":7}`)
		if r.code() != "INVALID_ARGUMENTS" {
			t.Fatalf("read with a number: %+v", r)
		}
	})
	t.Run("every call is one audit line", func(t *testing.T) {
		waitAudit(t, dir, ids)
	})
}

// saysGone reports whether a call's error says that the server or its
// plugin is gone or coming back.
func saysGone(msg string) bool {
	for _, why := range []string{"went away", "restarting", "plugin process exited", "plugin unreachable"} {
		if strings.Contains(msg, why) {
			return true
		}
	}
	return false
}
