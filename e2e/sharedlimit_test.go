package e2e

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
)

// TestSharedLimitAcrossReplicas: three hosts share one real Redis for the
// per-principal rate (6 a minute, bursts of 6); one principal (an API key
// every host accepts) sends 8 calls to each at once: at most 6 succeed in
// all, the others are DENIED as rate-limited across every replica. Then
// Redis goes away: with on_store_error left at "deny", calls are denied
// saying why, and the store's errors are counted in the metrics.
func TestSharedLimitAcrossReplicas(t *testing.T) {
	needShippedDeployment(t)
	srv := testredis.Start(t)
	const perMinute = 6
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	replicas, sessions := sharedReplicas(t, ctx, time.Millisecond,
		fmt.Sprintf("    per_principal {\n      rate  = %g\n      burst = %d\n      store = %q\n    }\n", perMinute/60.0, perMinute, srv.URL()))

	const each = 8
	var mu sync.Mutex
	counts := map[string]int{}
	var wg sync.WaitGroup
	for i, cs := range sessions {
		for j := range each {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r, err := nap(ctx, cs, fmt.Sprintf("%s-%d", replicas[i].name, j))
				kind := "other"
				switch {
				case err != nil:
					t.Errorf("call to %s: %v", replicas[i].name, err)
				case !r.IsError:
					kind = "ok"
				case strings.Contains(toolText(r), "rate-limited") && strings.Contains(toolText(r), "across every replica"):
					kind = "limited"
				default:
					t.Errorf("call to %s: %s", replicas[i].name, toolText(r))
				}
				mu.Lock()
				counts[kind]++
				counts[replicas[i].name+" "+kind]++
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	t.Logf("outcomes: %v", counts)
	if counts["ok"] > perMinute {
		t.Errorf("%d calls succeeded across the replicas; the limit is %d a minute", counts["ok"], perMinute)
	}
	if counts["ok"] == 0 || counts["ok"]+counts["limited"] != 3*each {
		t.Errorf("outcomes %v: want up to %d ok and the rest rate-limited", counts, perMinute)
	}

	// The store gone: denied, not let through.
	srv.Stop()
	r, err := nap(ctx, sessions[0], "after-redis")
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(toolText(r), "store cannot be reached") {
		t.Errorf("a call with the store down: isError %v %q", r.IsError, toolText(r))
	}
	if m := scrape(t, replicas[0].metrics); !strings.Contains(m, "plugkit_limit_store_errors_total{op=\"rate\"} 1") || !strings.Contains(m, "plugkit_limit_store_duration_seconds_count") {
		t.Errorf("the store's error is not in the metrics:\n%s", grepLines(m, "limit_store"))
	}
}

// grepLines returns the lines of s that contain word.
func grepLines(s, word string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, word) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// sharedReplicas starts three hosts (a, b, c) with policy as their
// per_principal block, each accepting one API key ("bot"), and opens an MCP
// session to each as its principal. The sessions end and the
// connections close when the test does.
func sharedReplicas(t *testing.T, ctx context.Context, nap time.Duration, policy string) ([]*replica, []*mcp.ClientSession) {
	t.Helper()
	testplugin := buildTestPlugin(t)
	keysFile := filepath.Join(t.TempDir(), "keys.hcl")
	out, stderr, code := cli(t, "key", "add", "bot", "-f", keysFile)
	if code != 0 {
		t.Fatalf("host key add: exit %d %s", code, stderr)
	}
	key := strings.TrimSpace(out)
	opts := replicaOptions{nap: nap, policy: policy, host: fmt.Sprintf("  mcp_auth {\n    keys = %q\n  }\n", keysFile)}
	var replicas []*replica
	for _, name := range []string{"a", "b", "c"} {
		replicas = append(replicas, startReplica(t, name, testplugin, opts))
	}
	transport := &http.Transport{}
	t.Cleanup(transport.CloseIdleConnections)
	hc := &http.Client{Transport: bearer{key, transport}}
	var sessions []*mcp.ClientSession
	for _, r := range replicas {
		cs, err := connectMCP(ctx, "http://"+r.mcp+"/mcp", hc)
		if err != nil {
			t.Fatalf("connect to %s: %v\n%s", r.name, err, r.run.stderr)
		}
		t.Cleanup(func() { cs.Close() })
		sessions = append(sessions, cs)
	}
	return replicas, sessions
}
