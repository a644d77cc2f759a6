package e2e

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// retryCount notes the tools/call requests a client sends and how many of
// them carry a requestState (retries).
type retryCount struct {
	next http.RoundTripper

	mu             sync.Mutex
	calls, retries int
}

func (r *retryCount) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body != nil {
		body, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) {
			r.mu.Lock()
			r.calls++
			if bytes.Contains(body, []byte(`"requestState"`)) {
				r.retries++
			}
			r.mu.Unlock()
		}
	}
	return r.next.RoundTrip(req)
}

func (r *retryCount) counts() (calls, retries int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.calls, r.retries
}

// TestApprovalsRoutedStateless: a 2026-07-28 client, served without a
// session, calls a tool routed to another principal. Its request does not
// wait for the approvers: it is answered input-required with nothing to
// ask, and the client's retry picks the waiting call up (with progress),
// and gets its result once the approver approves.
func TestApprovalsRoutedStateless(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	h := startApprovalsHost(t, "")
	progress := make(chan string, 16)
	count := &retryCount{next: http.DefaultTransport}
	client := mcp.NewClient(&mcp.Implementation{Name: "unattended-new-agent", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			select {
			case progress <- r.Params.Message:
			default:
			}
		},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: h.endpoint,
		HTTPClient: &http.Client{Transport: bearer{h.key, count}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect the agent: %v\n%s", err, h.run.stderr)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}

	done := mcpCallAsync(ctx, cs, "delete_file", `{"path":"todo.md"}`)
	req := h.pending(t, "delete_file")
	// The first request came back before any decision: the client has
	// retried.
	if !testkit.Eventually(30*time.Second, func() bool { _, retries := count.counts(); return retries > 0 }) {
		t.Fatalf("the client sent no retry while the call waited: its first request is held\n%s", h.run.stderr)
	}
	if msg := recvWithin(t, ctx, progress, "a progress notification on the retry"); !strings.Contains(msg, "waiting for approval by "+h.me+" or user:ann (request "+req.ID) {
		t.Errorf("progress while held: %q", msg)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "workspace", "todo.md")); err != nil {
		t.Fatalf("the file went before the approval: %v", err)
	}
	out, stderr, code := cli(t, "approvals", "approve", req.ID, "-c", h.config)
	if code != 0 || !strings.Contains(out, "approved by "+h.me) {
		t.Fatalf("host approvals approve: exit %d %q %s", code, out, stderr)
	}
	r := <-done
	if r.IsError {
		t.Fatalf("approved call: %s\n%s", toolText(r), h.run.stderr)
	}
	if _, err := os.Stat(filepath.Join(h.dir, "workspace", "todo.md")); !os.IsNotExist(err) {
		t.Errorf("the approved delete did not run: %v", err)
	}
	if calls, retries := count.counts(); calls < 2 || retries != calls-1 {
		t.Errorf("%d tools/call requests, %d of them retries; want the first and at least one retry", calls, retries)
	}
}
