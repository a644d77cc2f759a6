package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// The bridge with the test MCP server, whose effects the tests can see:
// how many calls reached it, a cancellation it saw, tools it adds and
// removes while running.

func testServerBlock(name, prefix string, extra string) string {
	return fmt.Sprintf(`
plugin %q {
  path = %q
  config {
    command = [%q]
    prefix  = %q
    trust_hints = true
%s  }
}
`, name, bin("plugins/mcp"), bin("mcp-test-server"), prefix, extra)
}

// serverCalls asks the test server how many calls reached it before.
func serverCalls(t *testing.T, h *hostRun, tool string) int {
	t.Helper()
	r := h.call(t, tool, `{}`)
	var v struct {
		StructuredContent struct{ Calls int } `json:"structuredContent"`
	}
	if !r.OK || json.Unmarshal(r.Value, &v) != nil {
		t.Fatalf("%s: %+v %s", tool, r, r.Value)
	}
	return v.StructuredContent.Calls
}

func TestRefusedCallsNeverReachTheServer(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, testServerBlock("test", "t", "")+safetyBlock(`
    deny "no-secrets" {
      tools   = ["t_*"]
      arguments = ["message"]
      pattern = ["(?i)secret"]
    }`))
	h := startHost(t, config, 3)
	before := serverCalls(t, h, "t_calls") // 0: this is the first call
	for _, tc := range []struct {
		name, tool, args, code string
	}{
		{"invalid arguments", "t_echo", `{"message":7}`, "INVALID_ARGUMENTS"},
		{"missing argument", "t_echo", `{}`, "INVALID_ARGUMENTS"},
		{"denied by a rule", "t_echo", `{"message":"my secret"}`, "DENIED"},
		{"destructive, nobody to ask", "t_wipe", `{}`, "DENIED"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if r := h.call(t, tc.tool, tc.args); r.code() != tc.code {
				t.Fatalf("%s %s: %+v, want %s", tc.tool, tc.args, r, tc.code)
			}
		})
	}
	// t_calls itself arrived once before; nothing else did.
	if after := serverCalls(t, h, "t_calls"); after != before+1 {
		t.Errorf("the server got %d calls between the two counts, want none", after-before-1)
	}
	if r := h.call(t, "t_echo", `{"message":"fine"}`); !r.OK {
		t.Errorf("an allowed call: %+v", r)
	}
	if r := h.call(t, "t_fail", `{}`); r.code() != "TOOL_ERROR" || r.message() != "it failed, as asked" {
		t.Errorf("isError: %+v", r)
	}
}

func TestListChangedThroughTheHost(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, testServerBlock("test", "t", ""))
	h := startHost(t, config, 2)
	has := func(name, desc string) func() bool {
		return func() bool {
			tool, ok := h.tools(t, "test")[name]
			return ok && (desc == "" || tool.Description == desc)
		}
	}
	if r := h.call(t, "t_set_tool", `{"name":"late","description":"first"}`); !r.OK {
		t.Fatalf("set_tool: %+v", r)
	}
	waitFor(t, 30*time.Second, "t_late registered", has("t_late", "first"))
	if r := h.call(t, "t_late", `{}`); !r.OK || text(t, r.Value) != "I am late" {
		t.Fatalf("t_late: %+v", r)
	}
	if r := h.call(t, "t_set_tool", `{"name":"late","description":"second"}`); !r.OK {
		t.Fatalf("set_tool: %+v", r)
	}
	waitFor(t, 30*time.Second, "t_late changed", has("t_late", "second"))
	if r := h.call(t, "t_remove_tool", `{"name":"late"}`); !r.OK {
		t.Fatalf("remove_tool: %+v", r)
	}
	waitFor(t, 30*time.Second, "t_late removed", func() bool { return !has("t_late", "")() })
	if r := h.call(t, "t_late", `{}`); r.code() != "UNKNOWN_TOOL" {
		t.Errorf("t_late after removal: %+v", r)
	}
}

// TestGatewayOverMCP serves the bridged tools of two servers again through
// `host mcp`: one gateway, each call checked and audited.
func TestGatewayOverMCP(t *testing.T) {
	needBinaries(t)
	everything := npmServer(t, "mcp-server-everything")
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, testServerBlock("test", "t", "")+fmt.Sprintf(`
plugin "everything" {
  path = %q
  config {
    command = [%q]
    prefix  = "ev"
    trust_hints = true
  }
}
`, bin("plugins/mcp"), everything))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.Command(bin("host"), "mcp", "-c", config)
	hostLog := &testkit.Buffer{}
	cmd.Stderr = hostLog
	client := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect to host mcp: %v\n%s", err, hostLog)
	}
	defer cs.Close()
	var calls int

	t.Run("tools/list", func(t *testing.T) {
		var tools []*mcp.Tool
		waitFor(t, 60*time.Second, "both servers' tools", func() bool {
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			tools = res.Tools
			n := 0
			for _, tool := range tools {
				if tool.Name == "ev_echo" || tool.Name == "t_echo" {
					n++
				}
			}
			return n == 2
		}, hostLog.String)
		for _, tool := range tools {
			if tool.Name != "ev_echo" {
				continue
			}
			if a := tool.Annotations; a == nil || !a.ReadOnlyHint || !a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint {
				t.Errorf("ev_echo annotations %+v", a)
			}
			if tool.Meta["plugkit/owner"] != "everything" {
				t.Errorf("ev_echo _meta %v", tool.Meta)
			}
		}
	})
	t.Run("calls: served as the server returned them", func(t *testing.T) {
		for tool, want := range map[string]string{"ev_echo": "Echo: a", "t_echo": "Echo: a"} {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "a"}})
			calls++
			if err != nil || res.IsError {
				t.Fatalf("%s: %v %+v", tool, err, res)
			}
			if len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != want || res.StructuredContent != nil {
				raw, _ := json.Marshal(res)
				t.Errorf("%s: %s, want the text %q alone", tool, raw, want)
			}
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev_get-structured-content", Arguments: map[string]any{"location": "Chicago"}})
		calls++
		if err != nil || res.IsError {
			t.Fatalf("ev_get-structured-content: %v %+v", err, res)
		}
		if m, ok := res.StructuredContent.(map[string]any); !ok || m["temperature"] == nil {
			t.Errorf("structuredContent %v", res.StructuredContent)
		}
	})
	cancelled := func(t *testing.T, tool, args string) {
		cctx, ccancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
			errc <- err
		}()
		time.Sleep(time.Second)
		ccancel()
		calls++
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("%s cancelled: %v", tool, err)
		}
	}
	t.Run("cancelled: the server gets the cancellation", func(t *testing.T) {
		cancelled(t, "t_wait", `{}`)
		waitFor(t, 30*time.Second, "the server's word that it was cancelled", func() bool {
			return strings.Contains(hostLog.String(), "wait: cancelled by the client")
		}, hostLog.String)
	})
	t.Run("cancelled: a long-running operation", func(t *testing.T) {
		cancelled(t, "ev_trigger-long-running-operation", `{"duration":30,"steps":3}`)
	})
	_ = cs.Close()

	t.Run("audit", func(t *testing.T) {
		lines := audit(t, dir)
		if len(lines) != calls {
			t.Fatalf("%d audit lines for %d calls: %+v", len(lines), calls, lines)
		}
		aborted := 0
		for _, l := range lines {
			if l.Code == "ABORTED" {
				aborted++
			}
		}
		if aborted != 2 {
			t.Errorf("%d ABORTED lines, want 2: %+v", aborted, lines)
		}
	})
}

// TestNoOrphans kills the plugin, then the host, with SIGKILL: the server,
// started through a shell so that it is a grandchild no parent-death signal
// reaches, must die each time.
func TestNoOrphans(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	block := fmt.Sprintf(`
plugin "test" {
  path = %q
  config {
    command = ["sh", "-c", "%s; echo done"]
  }
}
`, bin("plugins/mcp"), bin("mcp-test-server"))
	config := deployment(t, dir, block)
	h := startHost(t, config, 2)
	gone := func(what string, pids []int) {
		waitFor(t, 15*time.Second, what, func() bool {
			for _, pid := range pids {
				if alive(pid) {
					return false
				}
			}
			return true
		}, func() string { return fmt.Sprintf("still alive among %v", pids) })
	}
	below := func() (int, []int) {
		p := h.plugin(t, "test")
		srv := serverProcesses(p.PID)
		if len(srv) != 2 { // sh and the server
			t.Fatalf("want sh and the server below the plugin %d, found %v", p.PID, srv)
		}
		return p.PID, append(descendants(p.PID), p.PID)
	}

	t.Run("plugin SIGKILLed", func(t *testing.T) {
		plugin, pids := below()
		if err := syscall.Kill(plugin, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		gone("the plugin's launcher, shell and server to die", pids)
		h.waitActive(t, 2) // the host restarts it
		// The default prefix: the plugin's name.
		if r := h.call(t, "test_echo", `{"message":"back"}`); !r.OK {
			t.Fatalf("after the restart: %+v", r)
		}
	})
	t.Run("host SIGKILLed", func(t *testing.T) {
		_, pids := below()
		if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-h.done
		gone("every process below the host to die", pids)
	})
}

func TestStreamableHTTPWithHeaders(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	srv := exec.Command(bin("mcp-test-server"), "-http", "127.0.0.1:0", "-header", "Authorization=Bearer t0ken")
	srvLog := &testkit.Buffer{}
	srv.Stderr = srvLog
	stdout, err := srv.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	url, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "remote" {
  path = %q
  config {
    url    = %q
    prefix = "r"
    headers {
      Authorization = "Bearer t0ken"
    }
  }
}
`, bin("plugins/mcp"), strings.TrimSpace(url)))
	h := startHost(t, config, 2)
	if r := h.call(t, "r_echo", `{"message":"over http"}`); !r.OK || text(t, r.Value) != "Echo: over http" {
		t.Fatalf("r_echo: %+v", r)
	}
	if strings.Contains(srvLog.String(), "refused") {
		t.Errorf("the server refused requests: %s", srvLog)
	}
}

func TestValidate(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "neither" {
  path = %[1]q
  config {
    prefix = "x"
  }
}
plugin "both" {
  path = %[1]q
  config {
    command = ["srv"]
    url     = "http://127.0.0.1:1/mcp"
  }
}
plugin "mixed" {
  path = %[1]q
  config {
    url     = "http://127.0.0.1:1/mcp"
    env     = { A = "b" }
    timeout = "soon"
  }
}
`, bin("plugins/mcp")))
	_, stderr, code := cli(t, "validate", "-c", config)
	if code == 0 {
		t.Fatalf("validate accepted the file")
	}
	for _, want := range []string{
		`deployment.hcl:12:3: Invalid plugin config: Plugin "neither": config needs one of command, url.`,
		`deployment.hcl:20:5: Invalid plugin config: Plugin "both": config at /url cannot be set together with command.`,
		`deployment.hcl:27:5: Invalid plugin config: Plugin "mixed": config at /env cannot be set together with url.`,
		`deployment.hcl:28:5: Invalid plugin config: Plugin "mixed": config at /timeout: 'soon' does not match pattern`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("validate does not say\n  %s\nit says\n%s", want, stderr)
		}
	}
}
