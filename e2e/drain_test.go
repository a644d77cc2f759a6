package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readyz fetches /readyz: its status code, or 0 when nothing answers.
func readyz(hc *http.Client, addr string) (int, string) {
	resp, err := hc.Get("http://" + addr + readyzPath)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestDrainOnSIGTERMUnderLoad sends SIGTERM to `host run` while MCP
// clients keep calls of 400ms running, and counts: /readyz says 503 at
// once; every call either completed or was refused before it started (no
// call cut mid-way: none ended ABORTED, and no call the client saw fail is
// in the audit log); the audit log has every completed call, once; calls in
// flight when the signal came finished after readiness went; the host exits
// 0.
func TestDrainOnSIGTERMUnderLoad(t *testing.T) {
	needShippedDeployment(t)
	testplugin := buildTestPlugin(t)
	r := startReplica(t, "a", testplugin, replicaOptions{nap: 400 * time.Millisecond, shutdown: "20s"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hc := &http.Client{Transport: &http.Transport{}, Timeout: 30 * time.Second}
	defer hc.CloseIdleConnections()
	if code, body := readyz(hc, r.metrics); code != http.StatusOK {
		t.Fatalf("/readyz before the signal: %d %s", code, body)
	}
	if resp, err := hc.Get("http://" + r.metrics + healthzPath); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %v %v", resp, err)
	} else {
		resp.Body.Close()
	}

	const clients, maxCalls = 8, 50
	var got outcomes
	var wg sync.WaitGroup
	started := make(chan struct{}, clients*maxCalls)
	endpoint := "http://" + r.mcp + "/mcp"
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The SDK's default retries of the standalone stream: with
			// none, the client fails the session the moment the host
			// closes that stream at exit, and its reader may take the
			// failure before an answer it has already received (both are
			// ready in one select), losing a call the host answered.
			client := mcp.NewClient(&mcp.Implementation{Name: "drain-test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, nil)
			if err != nil {
				t.Errorf("client %d: connect before the signal: %v", c, err)
				return
			}
			defer cs.Close()
			// Each client calls until the host refuses or goes away.
			for i := range maxCalls {
				token := fmt.Sprintf("c%d-%d", c, i)
				started <- struct{}{}
				oc := judge(nap(ctx, cs, token))
				got.add(token, oc)
				if oc.kind != "ok" {
					return
				}
			}
		}()
	}
	// Under load: every client has a call in flight, some done.
	for range clients * 2 {
		<-started
	}
	signalled := time.Now()
	if err := r.run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	var notReady time.Time
	var notReadyBody string
	for time.Since(signalled) < 10*time.Second {
		code, body := readyz(hc, r.metrics)
		if code == http.StatusServiceUnavailable {
			notReady, notReadyBody = time.Now(), body
			break
		}
		if code == 0 {
			break // the host is gone
		}
		time.Sleep(2 * time.Millisecond)
	}
	// A new session during the drain is refused before anything starts.
	if !notReady.IsZero() {
		if _, err := connectMCP(ctx, endpoint, hc); err == nil {
			t.Error("a new MCP session was accepted while the host drained")
		}
	}
	wg.Wait()
	select {
	case <-r.run.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("host run did not exit after SIGTERM\n%s", r.run.stderr)
	}
	if r.run.err != nil {
		t.Errorf("host run exited with %v\n%s", r.run.err, r.run.stderr)
	}
	if notReady.IsZero() {
		t.Fatalf("/readyz never answered 503 after SIGTERM\n%s", r.run.stderr)
	}
	if !strings.Contains(notReadyBody, "draining") {
		t.Errorf("/readyz during the drain: %q", notReadyBody)
	}

	audited := map[string]auditRecord{}
	for _, l := range auditRecords(t, r.audit) {
		if l.Code == "ABORTED" {
			t.Errorf("a call was cut: audit line %+v", l)
		}
		if _, dup := audited[l.Token]; dup {
			t.Errorf("token %s audited twice", l.Token)
		}
		audited[l.Token] = l
	}
	var ok, refused, failed, afterNotReady int
	for token, oc := range got.m {
		l, inLog := audited[token]
		switch oc.kind {
		case "ok":
			ok++
			if !inLog || !l.OK {
				t.Errorf("call %s completed but the audit log has %+v (in log: %v)", token, l, inLog)
			}
			if oc.end.After(notReady) {
				afterNotReady++
			}
		case "refused":
			refused++
			if inLog {
				t.Errorf("call %s was refused yet ran: %+v", token, l)
			}
		default:
			// The client saw no answer: fine only if the call never
			// started (the listener was already closed).
			failed++
			if inLog {
				t.Errorf("call %s was cut: the client got %q but the host ran it: %+v", token, oc.text, l)
			}
		}
	}
	t.Logf("%d calls completed (%d of them after /readyz went 503, %s after SIGTERM), %d refused before they started, %d never reached the host",
		ok, afterNotReady, notReady.Sub(signalled).Round(time.Millisecond), refused, failed)
	if afterNotReady == 0 {
		t.Error("no call in flight at SIGTERM was let finish")
	}
	if refused+failed == 0 {
		t.Error("no call was refused: the clients did not run into the drain")
	}
}
