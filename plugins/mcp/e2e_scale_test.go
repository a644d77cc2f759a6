package main

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The scale of TestHundredServers: servers bridged, tools each (the test
// server's seven own tools and many_0 … many_92).
const (
	scaleServers = 100
	scaleTools   = 100
	scaleMany    = scaleTools - 7
)

// TestHundredServers runs a host over 100 bridged servers of 100 tools
// each, through the real binaries: every tool is listed over MCP, each
// server's tools answer a call, and one server's list_changed or reload
// leaves the other 99's registrations alone (their counts of tools
// registered do not move). The host's resident memory after start and the
// time to ACTIVE are reported in the test log, not asserted: the machines
// are shared.
func TestHundredServers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 200 processes")
	}
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	addr := loopbackAddr(t)
	var blocks strings.Builder
	for i := range scaleServers {
		fmt.Fprintf(&blocks, `
plugin %q {
  path = %q
  config {
    command     = [%q, "-many", "%d"]
    trust_hints = true
  }
}
`, server(i), bin("plugins/mcp"), bin("mcp-test-server"), scaleMany)
	}
	config := filepath.Join(dir, "deployment.hcl")
	hcl := fmt.Sprintf("host {\n  admin_socket = \"run/host.sock\"\n  mcp = %q\n}\n%s", addr, blocks.String())
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	h := startHostAnyState(t, config)
	// Longer than waitActive's bound: 200 processes start on a machine
	// that may be running other tests.
	h.waitActiveWithin(t, scaleServers, 5*time.Minute)
	took := time.Since(start)
	t.Logf("%d servers of %d tools ACTIVE %s after host run started", scaleServers, scaleTools, took.Round(10*time.Millisecond))
	t.Logf("host resident memory after start: %s; the %d bridge processes together: %s",
		mib(rss(t, h.cmd.Process.Pid)), scaleServers, mib(bridgesRSS(t, h)))

	registered := func() map[string]int64 {
		out := map[string]int64{}
		for _, p := range h.status(t) {
			out[p.Name] = p.Registered
		}
		return out
	}
	before := registered()
	for i := range scaleServers {
		if n := before[server(i)]; n != scaleTools {
			t.Fatalf("%s registered %d tools at start, want %d", server(i), n, scaleTools)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	changed := make(chan struct{}, 16)
	client := mcp.NewClient(&mcp.Implementation{Name: "scale-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case changed <- struct{}{}:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect over MCP: %v\n%s", err, h.log)
	}
	defer cs.Close()

	listed := map[string]bool{}
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		listed[tool.Name] = true
	}
	if len(listed) != scaleServers*scaleTools {
		t.Errorf("tools/list gave %d tools, want %d", len(listed), scaleServers*scaleTools)
	}
	for i := range scaleServers {
		for _, name := range []string{"echo", "many_0", fmt.Sprintf("many_%d", scaleMany-1)} {
			if full := server(i) + "_" + name; !listed[full] {
				t.Fatalf("tools/list lacks %s", full)
			}
		}
	}

	// A call to each server's tools.
	for i := range scaleServers {
		name := fmt.Sprintf("many_%d", i%scaleMany)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server(i) + "_" + name, Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("call %s_%s: %v %+v", server(i), name, err, res)
		}
		if got := res.Content[0].(*mcp.TextContent).Text; got != "I am "+name {
			t.Fatalf("call %s_%s answered %q", server(i), name, got)
		}
	}

	// One server adds a tool: its list_changed registers that one tool,
	// the other 99 register nothing, and MCP clients hear of it.
	const one = 42
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server(one) + "_set_tool", Arguments: map[string]any{"name": "added", "description": "Added at run time."}}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 60*time.Second, "the added tool registered", func() bool {
		return registered()[server(one)] == scaleTools+1
	}, h.log.String)
	select {
	case <-changed:
	case <-time.After(30 * time.Second):
		t.Error("no tools/list_changed reached the MCP client")
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: server(one) + "_added", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Errorf("call the added tool: %v %+v", err, res)
	}
	others := func(what string, want map[string]int64) {
		t.Helper()
		got := registered()
		for i := range scaleServers {
			if i == one {
				continue
			}
			if got[server(i)] != want[server(i)] {
				t.Errorf("after %s, %s registered %d tools, had %d", what, server(i), got[server(i)], want[server(i)])
			}
		}
	}
	others("one server's list_changed", before)

	// Reloading that server registers its tools again; no other server's.
	pids := map[string]int{}
	for _, p := range h.status(t) {
		pids[p.Name] = p.PID
	}
	if out, stderr, code := cli(t, "reload", server(one), "-c", config); code != 0 {
		t.Fatalf("reload %s: %d %s%s", server(one), code, out, stderr)
	}
	after := registered()
	if after[server(one)] <= scaleTools+1 {
		t.Errorf("after its reload, %s registered %d tools in all, want more than %d", server(one), after[server(one)], scaleTools+1)
	}
	others("one server's reload", before)
	for _, p := range h.status(t) {
		if p.Name != server(one) && p.PID != pids[p.Name] {
			t.Errorf("%s's process changed (%d, was %d) when %s reloaded", p.Name, p.PID, pids[p.Name], server(one))
		}
	}
}

func server(i int) string { return fmt.Sprintf("s%02d", i) }

// loopbackAddr is a loopback address nothing listens on now.
func loopbackAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// rss is a process's resident memory in bytes, from /proc.
func rss(t *testing.T, pid int) int64 {
	t.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(v), "%d kB", &kb); err != nil {
				t.Fatalf("VmRSS of %d: %q", pid, v)
			}
			return kb * 1024
		}
	}
	t.Fatalf("no VmRSS for process %d", pid)
	return 0
}

// bridgesRSS is the resident memory of the host's plugin processes
// together.
func bridgesRSS(t *testing.T, h *hostRun) int64 {
	var sum int64
	for _, p := range h.status(t) {
		if p.PID != 0 {
			sum += rss(t, p.PID)
		}
	}
	return sum
}

func mib(b int64) string { return fmt.Sprintf("%.0f MiB", float64(b)/(1<<20)) }
