package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/mcpserver"
)

// slowLorisEnv makes the test binary a slow-loris attacker of the MCP
// address it holds ("addr count"): runAsSlowLoris.
const slowLorisEnv = "PLUGKIT_TEST_SLOW_LORIS"

// runAsSlowLoris, when the test binary was started as an attacker, opens
// count connections to addr, each sending a POST's headers and the first
// byte of a body that never comes; it prints how many the server holds
// and how many it answered 429, then keeps them until stdin closes, and
// exits.
func runAsSlowLoris() {
	spec := os.Getenv(slowLorisEnv)
	if spec == "" {
		return
	}
	addr, n, _ := strings.Cut(spec, " ")
	count, _ := strconv.Atoi(n)
	var held, refused, failed atomic.Int64
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	for range count {
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err != nil {
			failed.Add(1)
			continue
		}
		mu.Lock()
		conns = append(conns, c)
		mu.Unlock()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: 100000\r\n\r\n{", mcpserver.Path, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.SetReadDeadline(time.Now().Add(3 * time.Second))
			line, err := bufio.NewReader(c).ReadString('\n')
			switch {
			case strings.HasPrefix(line, "HTTP/1.1 429 "):
				refused.Add(1)
			case err != nil && strings.Contains(err.Error(), "timeout"):
				held.Add(1) // still waiting for its body
			default:
				failed.Add(1)
			}
			_ = c.SetReadDeadline(time.Time{})
		}()
	}
	wg.Wait()
	fmt.Printf("held %d refused %d failed %d\n", held.Load(), refused.Load(), failed.Load())
	_, _ = io.Copy(io.Discard, os.Stdin)
	for _, c := range conns {
		c.Close()
	}
	os.Exit(0)
}

// TestAttackSlowLorisFromOtherUser: another local user opens more stalled
// MCP requests than the host's whole connection cap (256), whose bodies
// never come. Only mcp_max_conns_per_peer of them are held, the rest are
// answered 429 at once, and the host's own user connects and calls a tool
// meanwhile. Without the bound per peer, the stalled requests held every
// connection until their body timeout (30 s), and the host's user waited.
func TestAttackSlowLorisFromOtherUser(t *testing.T) {
	needShippedDeployment(t)
	if os.Geteuid() != 0 {
		testenv.Missing(t, "root, to run an attacker as another user")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	addr := freeLoopbackAddr(t)
	const perPeer, attack = 16, 3 * mcpserver.DefaultMaxConns / 2
	config := deploymentFileWith(t, dir, deploymentTweaks{host: fmt.Sprintf("  mcp = %q\n  mcp_max_conns_per_peer = %d\n", addr, perPeer)})
	running := startHost(t, config, len(shippedPlugins))

	cmd := exec.CommandContext(ctx, otherUserBinary(t))
	cmd.Env = []string{slowLorisEnv + "=" + addr + " " + strconv.Itoa(attack)}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("the attacker: %v", err)
		}
	}()
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		t.Fatalf("the attacker said nothing: %v", err)
	}
	t.Logf("the other user's stalled requests: %s", strings.TrimSpace(line))
	var held, refused, failed int
	if _, err := fmt.Sscanf(line, "held %d refused %d failed %d", &held, &refused, &failed); err != nil {
		t.Fatalf("the attacker printed %q: %v", line, err)
	}
	if held != perPeer || refused != attack-perPeer {
		t.Errorf("the host held %d of the other user's stalled requests and refused %d, want %d and %d", held, refused, perPeer, attack-perPeer)
	}

	// While they are held, the host's own user is served, promptly.
	callCtx, callCancel := context.WithTimeout(ctx, 10*time.Second)
	defer callCancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "owner", Version: "1"}, nil)
	cs, err := client.Connect(callCtx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp"}, nil)
	if err != nil {
		t.Fatalf("connect as the host's user during the attack: %v\n%s", err, tail(running.stderr.String()))
	}
	defer cs.Close()
	waitTools(t, callCtx, cs, "list_dir")
	if r := mcpCall(t, callCtx, cs, "list_dir", `{"path":"."}`); r.IsError {
		t.Fatalf("list_dir as the host's user during the attack: %s", toolText(r))
	}
	if !strings.Contains(running.stderr.String(), "mcp_max_conns_per_peer") {
		t.Errorf("the host did not log the refusals\n%s", tail(running.stderr.String()))
	}
}
