package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/mcpserver"
)

// openFDs counts the file descriptors process pid holds.
func openFDs(t *testing.T, pid int) int {
	t.Helper()
	entries, err := os.ReadDir("/proc/" + strconv.Itoa(pid) + "/fd")
	if err != nil {
		t.Fatalf("descriptors of %d: %v", pid, err)
	}
	return len(entries)
}

// setNofile sets the soft RLIMIT_NOFILE of process pid (the host under
// test, never this process) and returns a function that puts the old one
// back.
func setNofile(t *testing.T, pid, soft int) (restore func()) {
	t.Helper()
	var old unix.Rlimit
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, nil, &old); err != nil {
		t.Fatalf("prlimit %d: %v", pid, err)
	}
	lim := unix.Rlimit{Cur: uint64(soft), Max: old.Max}
	if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &lim, nil); err != nil {
		t.Fatalf("prlimit %d: %v", pid, err)
	}
	t.Logf("host %d: descriptor limit %d (was %d)", pid, soft, old.Cur)
	return func() {
		if err := unix.Prlimit(pid, unix.RLIMIT_NOFILE, &old, nil); err != nil && err != unix.ESRCH {
			t.Errorf("prlimit %d: %v", pid, err)
		}
	}
}

// slowLoris opens n connections to the MCP endpoint at addr, each sending
// a POST's headers and the first byte of a body that never comes, and
// returns them; closing them ends the attack.
func slowLoris(t *testing.T, addr string, n int) []net.Conn {
	t.Helper()
	conns := make([]net.Conn, 0, n)
	for range n {
		c, err := net.DialTimeout("tcp", addr, 10*time.Second)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			t.Fatalf("slow loris: dial: %v", err)
		}
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", mcpserver.Path, addr)
		conns = append(conns, c)
	}
	return conns
}

// TestAttackFDExhaustion runs the sample deployment with MCP over HTTP and
// a descriptor limit just above what it needs plus its MCP connection cap,
// then attacks it:
//
//  1. three times the connection cap of stalled MCP requests (a slow-loris
//     attack): the host holds no more than the cap, so `host status`, a
//     real call and a plugin's crash restart all work during the attack,
//     and an MCP client is served once it ends;
//  2. no descriptor left at all while a plugin crashes: its restart fails
//     with "too many open files", counts as a crash and is tried again,
//     and the plugin is back by itself once descriptors are free.
//
// The limit is set on the host's process from outside (prlimit), never on
// the test's own.
func TestAttackFDExhaustion(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	addr := freeLoopbackAddr(t)
	dir := t.TempDir()
	config := deploymentFileWith(t, dir, deploymentTweaks{
		// One peer (this test) may hold the whole connection cap: the cap
		// on descriptors is what is attacked here, the bound per peer in
		// TestAttackSlowLorisFromOtherUser.
		host: fmt.Sprintf("  mcp = %q\n  mcp_max_conns_per_peer = %d\n", addr, mcpserver.DefaultMaxConns),
		plugin: func(name string) string {
			if name != "files" {
				return ""
			}
			return "  restart {\n    attempts    = 100\n    window      = \"1m\"\n    backoff     = \"20ms\"\n    max_backoff = \"200ms\"\n  }\n"
		},
	})
	h := startFaultHostWith(t, dir, config)
	pid := h.run.cmd.Process.Pid
	base := openFDs(t, pid)
	// Room for the MCP connection cap and a little more (admin
	// connections, a plugin restart's pipes and socket); 3× the cap of
	// connections would exhaust it without the cap.
	restore := setNofile(t, pid, base+mcpserver.DefaultMaxConns+100)
	defer restore()

	t.Run("slow loris on MCP", func(t *testing.T) {
		attack := slowLoris(t, addr, 3*mcpserver.DefaultMaxConns)
		defer func() {
			for _, c := range attack {
				c.Close()
			}
		}()
		if !testkit.Eventually(60*time.Second, func() bool { return openFDs(t, pid) >= base+mcpserver.DefaultMaxConns }) {
			t.Fatalf("the host took %d descriptors, not the %d the attack should hold", openFDs(t, pid)-base, mcpserver.DefaultMaxConns)
		}
		held := openFDs(t, pid) - base
		t.Logf("under attack: the host holds %d more descriptors (cap %d, %d attacking)", held, mcpserver.DefaultMaxConns, len(attack))
		if held > mcpserver.DefaultMaxConns+20 {
			t.Errorf("the host holds %d more descriptors under attack, over its connection cap of %d", held, mcpserver.DefaultMaxConns)
		}

		if out, stderr, code := cli(t, "status", "-c", config); code != 0 || !strings.Contains(out, "files") {
			t.Fatalf("host status under attack: exit %d\n%s%s", code, out, stderr)
		}
		if r, code := callJSON(t, config, "search", `{"q":"hot reload","limit":1}`); code != 0 || !r.OK {
			t.Fatalf("host call search under attack: exit %d %+v", code, r)
		}
		// A plugin that crashes now needs descriptors to start again.
		old := h.status(t)["files"].PID
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitBack(t, h, "files", old)
		if r, code := callJSON(t, config, "read_file", `{"path":"notes.md"}`); code != 0 || !r.OK {
			t.Fatalf("read_file under attack: exit %d %+v", code, r)
		}
		for _, c := range attack {
			c.Close()
		}

		// Once the attack ends, an MCP client is served.
		httpClient := &http.Client{Transport: &http.Transport{}}
		defer httpClient.CloseIdleConnections()
		client := mcp.NewClient(&mcp.Implementation{Name: "after-the-attack", Version: "1"}, nil)
		var cs *mcp.ClientSession
		var err error
		if !testkit.Eventually(60*time.Second, func() bool {
			cctx, ccancel := context.WithTimeout(ctx, 10*time.Second)
			defer ccancel()
			cs, err = client.Connect(cctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + mcpserver.Path, HTTPClient: httpClient}, nil)
			return err == nil
		}) {
			t.Fatalf("MCP after the attack: %v\n%s", err, tail(h.run.stderr.String()))
		}
		defer cs.Close()
		r := mcpCall(t, ctx, cs, "search", `{"q":"monotonic guard","limit":1}`)
		if r.IsError {
			t.Fatalf("MCP search after the attack: %q", toolText(r))
		}
	})

	t.Run("a restart with no descriptor left", func(t *testing.T) {
		old := h.status(t)["files"].PID
		// Every descriptor number is taken from 3 up: nothing new opens.
		dry := setNofile(t, pid, 3)
		if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
			dry()
			t.Fatal(err)
		}
		// Two starts fail, one after the other, before descriptors come back.
		if !testkit.Eventually(60*time.Second, func() bool { return failedStarts(h.run.stderr.String()) >= 2 }) {
			dry()
			t.Fatalf("no failed start logged\n%s", tail(h.run.stderr.String()))
		}
		restore()
		waitBack(t, h, "files", old)
		st := h.status(t)["files"]
		t.Logf("files after the attack: %+v", st)
		if st.Restarts < 3 || !strings.Contains(st.LastExit, "too many open files") {
			t.Errorf("files: restarts %d, last exit %q; want the failed starts counted as crashes", st.Restarts, st.LastExit)
		}
		if r, code := callJSON(t, config, "read_file", `{"path":"notes.md"}`); code != 0 || !r.OK {
			t.Fatalf("read_file after the attack: exit %d %+v", code, r)
		}
	})
	h.stop(t)
}

// failedStarts counts the restarts the host logged as failed for want of
// descriptors.
func failedStarts(log string) int {
	n := 0
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "plugin process did not start; trying again") && strings.Contains(line, "too many open files") {
			n++
		}
	}
	return n
}

// waitBack waits for plugin to be ACTIVE in a process other than old.
func waitBack(t *testing.T, h *faultHost, plugin string, old int) {
	t.Helper()
	var st map[string]admin.PluginStatus
	if !testkit.Eventually(60*time.Second, func() bool {
		st = h.status(t)
		h.notePIDs(t, st)
		p := st[plugin]
		return p.State == "ACTIVE" && p.PID > 0 && p.PID != old
	}) {
		t.Fatalf("%s not back after its process was killed: %+v\n%s", plugin, st[plugin], tail(h.run.stderr.String()))
	}
}

// TestAttackOversizedAdminCall sends the running host a call larger than
// its max_message_bytes: it is refused with an error naming the limit, and
// the host goes on serving.
func TestAttackOversizedAdminCall(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	h := startFaultHostWith(t, dir, deploymentFileWith(t, dir, deploymentTweaks{host: "  max_message_bytes = 1048576\n"}))
	args, _ := json.Marshal(map[string]string{"path": "big.md", "content": strings.Repeat("x", 4<<20)})
	_, err := h.client.Call(ctx, "write_file", args, nil)
	if err == nil || !strings.Contains(err.Error(), "call: refused") || !strings.Contains(err.Error(), "max_message_bytes is 1048576") {
		t.Fatalf("an oversized call = %v, want it refused naming max_message_bytes", err)
	}
	t.Logf("refused: %v", err)
	if r, code := callJSON(t, h.config, "read_file", `{"path":"notes.md"}`); code != 0 || !r.OK {
		t.Fatalf("read_file after the oversized call: exit %d %+v", code, r)
	}
	if _, err := os.Stat(dir + "/workspace/big.md"); !os.IsNotExist(err) {
		t.Errorf("the oversized call wrote its file: %v", err)
	}
	h.stop(t)
}
