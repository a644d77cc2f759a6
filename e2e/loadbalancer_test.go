package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testhaproxy"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// TestSessionsStickThroughHAProxy puts Debian's HAProxy, routing on the
// Mcp-Session-Id header with a stick table, in front of three hosts. Six
// clients open sessions through it and call: every call of a session runs
// on the one replica that opened it. Then one client's replica is killed
// (SIGKILL, host and plugins): that client's next request gets 404 from
// another replica, as the MCP specification says of an unknown session; it
// opens a new session, which lands on a live replica, and its retried call
// runs there. In the end the three audit logs, merged, hold every call
// that answered ok exactly once and the refused request in none; each log
// verifies as a chain of its own with `audit verify`, and the three put end
// to end do not verify as one.
func TestSessionsStickThroughHAProxy(t *testing.T) {
	needShippedDeployment(t)
	testplugin := buildTestPlugin(t)
	names := []string{"a", "b", "c"}
	replicas := map[string]*replica{}
	backends := map[string]string{}
	for _, n := range names {
		replicas[n] = startReplica(t, n, testplugin, replicaOptions{nap: time.Millisecond})
		backends[n] = replicas[n].mcp
	}
	lb := testhaproxy.Start(t, backends, names)
	endpoint := "http://" + lb.Addr + "/mcp"

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	transport := &http.Transport{}
	defer transport.CloseIdleConnections()
	hc := &http.Client{Transport: transport, Timeout: 30 * time.Second}

	const clients, calls = 6, 3
	var sessions []*mcp.ClientSession
	var okTokens []string
	for i := range clients {
		cs, err := connectMCP(ctx, endpoint, hc)
		if err != nil {
			t.Fatalf("session %d through haproxy: %v\nhaproxy:\n%s", i, err, lb.Output())
		}
		defer cs.Close()
		sessions = append(sessions, cs)
		for j := range calls {
			tok := fmt.Sprintf("s%d-%d", i, j)
			r, err := nap(ctx, cs, tok)
			if err != nil || r.IsError {
				t.Fatalf("call %s: %v %s", tok, err, resultText(r))
			}
			okTokens = append(okTokens, tok)
		}
	}

	// Where session 0 lives: the replica whose audit log has its last call.
	victim := waitForToken(t, replicas, fmt.Sprintf("s0-%d", calls-1))
	v := replicas[victim]
	if err := syscall.Kill(-v.run.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing replica %s: %v", victim, err)
	}
	<-v.run.done
	// HAProxy closes the client connections it had paired with the dead
	// replica's; a kept-alive one reused for the next POST reads EOF (a
	// connection error a client retries on a new connection), which is not
	// what this test is about: the requests below take new connections.
	transport.CloseIdleConnections()

	// The client's next request, with its old session, answered 404 by a
	// replica that never saw it; the call does not run anywhere.
	status, body := postWithSession(t, ctx, hc, endpoint, sessions[0].ID(), "refused-after-kill")
	if status != http.StatusNotFound {
		t.Fatalf("a request of the killed replica's session: %d %s, want 404\nhaproxy:\n%s", status, body, lb.Output())
	}
	// A new session, on a live replica, where the call runs.
	fresh, err := connectMCP(ctx, endpoint, hc)
	if err != nil {
		t.Fatalf("a new session after the kill: %v\nhaproxy:\n%s", err, lb.Output())
	}
	defer fresh.Close()
	if r, err := nap(ctx, fresh, "s0-retry"); err != nil || r.IsError {
		t.Fatalf("the retried call: %v %s", err, resultText(r))
	}
	okTokens = append(okTokens, "s0-retry")
	// The other sessions go on: those of live replicas where they were;
	// one that lived on the killed replica too fails (checked below).
	failed := map[int]string{}
	for i := 1; i < clients; i++ {
		tok := fmt.Sprintf("s%d-after", i)
		r, err := nap(ctx, sessions[i], tok)
		switch {
		case err == nil && !r.IsError:
			okTokens = append(okTokens, tok)
		case err != nil:
			failed[i] = err.Error()
		default:
			t.Errorf("call %s after the kill: %s", tok, resultText(r))
		}
	}

	// Stop the live replicas so that their logs are complete, then count.
	for _, n := range names {
		stopReplica(t, replicas[n])
	}
	where := map[string][]string{} // token → replicas whose log has it
	for _, n := range names {
		for _, rec := range auditRecords(t, replicas[n].audit) {
			if rec.Token == "" {
				continue
			}
			if !rec.OK {
				t.Errorf("replica %s audited %s as not ok: %s", n, rec.Token, rec.Code)
			}
			where[rec.Token] = append(where[rec.Token], n)
		}
	}
	for _, tok := range okTokens {
		if len(where[tok]) != 1 {
			t.Errorf("call %s answered ok and is in the audit logs of %v, want exactly one", tok, where[tok])
		}
	}
	if len(where["refused-after-kill"]) != 0 {
		t.Errorf("the request answered 404 ran on %v", where["refused-after-kill"])
	}
	if len(where) != len(okTokens) {
		t.Errorf("the audit logs hold %d calls, the clients saw %d answered ok: %v", len(where), len(okTokens), where)
	}
	// Every session's calls on one replica; the sessions spread over more
	// than one.
	used := map[string]bool{}
	for i := range clients {
		home := where[fmt.Sprintf("s%d-0", i)]
		for j := range calls {
			tok := fmt.Sprintf("s%d-%d", i, j)
			if fmt.Sprint(where[tok]) != fmt.Sprint(home) {
				t.Errorf("session %d: call %s ran on %v, its first on %v", i, tok, where[tok], home)
			}
		}
		if len(home) == 1 {
			used[home[0]] = true
		}
	}
	for i, msg := range failed {
		if home := where[fmt.Sprintf("s%d-0", i)]; len(home) != 1 || home[0] != victim {
			t.Errorf("session %d on %v failed after replica %s was killed: %s", i, home, victim, msg)
		}
		if got := where[fmt.Sprintf("s%d-after", i)]; len(got) != 0 {
			t.Errorf("session %d's call failed at the client but ran on %v", i, got)
		}
	}
	if len(used) < 2 {
		t.Errorf("haproxy sent all %d sessions to %v", clients, used)
	}
	if got := where["s0-retry"]; len(got) == 1 && got[0] == victim {
		t.Errorf("the retried call ran on the killed replica %s", victim)
	}
	// Each replica's log is a chain of its own, verified by itself, as a
	// collector does; the logs put end to end are not one chain.
	var merged []byte
	for _, n := range names {
		out, err := exec.Command(pluginPath("audit"), "verify", replicas[n].audit).CombinedOutput()
		if err != nil || !strings.HasPrefix(string(out), "ok: ") {
			t.Errorf("audit verify of replica %s's log: %v %s", n, err, out)
		}
		data, err := os.ReadFile(replicas[n].audit)
		if err != nil {
			t.Fatal(err)
		}
		merged = append(merged, data...)
	}
	mergedPath := filepath.Join(t.TempDir(), "merged.log")
	if err := os.WriteFile(mergedPath, merged, 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(pluginPath("audit"), "verify", mergedPath).CombinedOutput(); err == nil {
		t.Errorf("three replicas' logs end to end verify as one chain: %s", out)
	}
}

// resultText is a call's text, or "" for no result.
func resultText(r *mcp.CallToolResult) string {
	if r == nil {
		return ""
	}
	return toolText(r)
}

// waitForToken returns the name of the replica whose audit log records the
// call with token, waiting for the audit plugin to write it.
func waitForToken(t *testing.T, replicas map[string]*replica, token string) string {
	t.Helper()
	var name string
	if !testkit.Eventually(30*time.Second, func() bool {
		for n, r := range replicas {
			for _, rec := range auditRecords(t, r.audit) {
				if rec.Token == token {
					name = n
					return true
				}
			}
		}
		return false
	}) {
		t.Fatalf("no replica's audit log has the call %s", token)
	}
	return name
}

// postWithSession sends a tools/call of nap with token under session id,
// as the MCP client would, and returns the answer's status and body.
func postWithSession(t *testing.T, ctx context.Context, hc *http.Client, endpoint, id, token string) (int, string) {
	t.Helper()
	body := fmt.Sprintf(`{"jsonrpc":"2.0","id":99,"method":"tools/call","params":{"name":"nap","arguments":{"token":%q}}}`, token)
	// A connection error is retried, as a client does: right after a
	// replica dies, HAProxy may end the connection it sent the request on
	// to that replica. The test's callers check that the call ran nowhere,
	// so a retry cannot hide a call run twice.
	var resp *http.Response
	for attempt := 1; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Mcp-Session-Id", id)
		resp, err = hc.Do(req)
		if err == nil {
			break
		}
		if attempt == 3 {
			t.Fatalf("POST with session %s, %d attempts: %v", id, attempt, err)
		}
		t.Logf("POST with session %s: %v; again on a new connection", id, err)
		hc.CloseIdleConnections()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// stopReplica ends a replica with SIGTERM, as Kubernetes does, and waits
// for it; one already gone is left as it is.
func stopReplica(t *testing.T, r *replica) {
	t.Helper()
	select {
	case <-r.run.done:
		return
	default:
	}
	_ = r.run.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-r.run.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("replica %s did not stop within a minute of SIGTERM\n%s", r.name, r.run.stderr)
	}
}
