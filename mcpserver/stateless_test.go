package mcpserver_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/mcpserver"
	"github.com/plugkit-go/plugkit/pipeline"
)

// replicas routes a 2026-07-28 client's requests: a retry that carries a
// requestState goes to the retry endpoint, every other request to first,
// as a load balancer without affinity may. It records every request's and
// answer's session header, and may tamper with the requestState.
type replicas struct {
	first, retry string // host:port
	tamper       bool

	rt       *http.Transport
	mu       sync.Mutex
	sessions []string // every Mcp-Session-Id seen, either way
	states   []string // every requestState sent
	retries  int
}

func newReplicas(t *testing.T, first, retry string) *replicas {
	r := &replicas{first: hostOf(t, first), retry: hostOf(t, retry), rt: &http.Transport{}}
	t.Cleanup(r.rt.CloseIdleConnections)
	return r
}

func hostOf(t *testing.T, endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	return u.Host
}

func (r *replicas) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		if body, err = io.ReadAll(req.Body); err != nil {
			return nil, err
		}
		req.Body.Close()
	}
	out := req.Clone(req.Context())
	out.URL.Host, out.Host = r.first, r.first
	var msg struct {
		Params map[string]any `json:"params"`
	}
	if json.Unmarshal(body, &msg) == nil {
		if state, ok := msg.Params["requestState"].(string); ok {
			out.URL.Host, out.Host = r.retry, r.retry
			r.mu.Lock()
			r.states = append(r.states, state)
			r.retries++
			r.mu.Unlock()
			if r.tamper {
				body = bytes.Replace(body, []byte(state), []byte(flip(state)), 1)
			}
		}
	}
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	res, err := r.rt.RoundTrip(out)
	r.mu.Lock()
	defer r.mu.Unlock()
	if id := req.Header.Get("Mcp-Session-Id"); id != "" {
		r.sessions = append(r.sessions, "request: "+id)
	}
	if err == nil {
		if id := res.Header.Get("Mcp-Session-Id"); id != "" {
			r.sessions = append(r.sessions, "answer: "+id)
		}
	}
	return res, err
}

// flip changes one character in the middle of a requestState.
func flip(s string) string {
	b := []byte(s)
	i := len(b) / 2
	if b[i] == 'A' {
		b[i] = 'B'
	} else {
		b[i] = 'A'
	}
	return string(b)
}

// connectVia connects a 2026-07-28 client (the SDK's newest) through r.
func connectVia(t *testing.T, ctx context.Context, r *replicas, c *mcp.Client) *mcp.ClientSession {
	t.Helper()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + r.first + mcpserver.Path, HTTPClient: &http.Client{Transport: r}}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	return cs
}

func stateKey(t *testing.T) [][]byte {
	k := make([]byte, mcpserver.StateKeyBytes)
	rand.Read(k)
	return [][]byte{k}
}

func statelessFixture(t *testing.T, keys [][]byte) (*fixture, string) {
	t.Helper()
	return statelessFixtureTimeout(t, keys, 5*time.Second)
}

func statelessFixtureTimeout(t *testing.T, keys [][]byte, approvalTimeout time.Duration) (*fixture, string) {
	t.Helper()
	f := newFixture(t, approvalTimeout)
	if err := f.srv.UseStateKeys(keys); err != nil {
		t.Fatal(err)
	}
	return f, serveHTTP(t, f.srv)
}

// A 2026-07-28 client over HTTP is served without a session: no request
// or answer carries Mcp-Session-Id, and an Ask comes back as an
// input-required result whose retry completes the call.
func TestStatelessHTTP(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	f, endpoint := statelessFixture(t, stateKey(t))
	r := newReplicas(t, endpoint, endpoint)
	user := &elicitor{}
	user.set(reply("accept", true))
	cs := connectVia(t, ctx, r, newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}))

	res, err := cs.ListTools(ctx, nil)
	if err != nil || len(res.Tools) == 0 {
		t.Fatalf("tools/list: %v, %d tools", err, len(res.Tools))
	}
	if got := call(t, ctx, cs, "echo", `{"text":"hi"}`); got.IsError || text(got) != "hi" {
		t.Fatalf("echo: isError %v, text %q", got.IsError, text(got))
	}
	if got := call(t, ctx, cs, "delete", `{"text":"notes"}`); got.IsError || text(got) != "deleted notes" {
		t.Fatalf("delete: isError %v, text %q", got.IsError, text(got))
	}
	if q := user.asked(); len(q) != 1 || !strings.Contains(q[0], "delete is destructive") {
		t.Fatalf("the user was asked %q", q)
	}
	r.mu.Lock()
	sessions, retries := r.sessions, r.retries
	r.mu.Unlock()
	if len(sessions) != 0 {
		t.Fatalf("session headers went by: %q", sessions)
	}
	if retries != 1 {
		t.Fatalf("%d retries, want 1", retries)
	}
	// The call that asked ended when its request did; the retry is the
	// call that ran.
	if got := f.audit.codesOf(t, "delete", 2); len(got) != 2 || got[0] != pipeline.CodeAborted || got[1] != codeOK {
		t.Fatalf("delete recorded %v, want [ABORTED, ok]", got)
	}

	t.Run("refused", func(t *testing.T) {
		user.set(reply("accept", false))
		got := call(t, ctx, cs, "delete", `{"text":"drafts"}`)
		if !got.IsError || !strings.HasPrefix(text(got), "DENIED: approver host refused") {
			t.Fatalf("delete: isError %v, text %q", got.IsError, text(got))
		}
	})
	t.Run("a client without elicitation is denied", func(t *testing.T) {
		mute := connectVia(t, ctx, r, newClient(nil))
		got := call(t, ctx, mute, "delete", `{"text":"notes"}`)
		if !got.IsError || !strings.Contains(text(got), "approval needed") {
			t.Fatalf("delete: isError %v, text %q", got.IsError, text(got))
		}
	})
}

// The retry of an Ask may land on another replica: one holding the same
// key runs the approved call; one without it refuses the retry.
func TestStatelessRetryOnOtherReplica(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	keys := stateKey(t)
	a, endpointA := statelessFixture(t, keys)
	b, endpointB := statelessFixture(t, keys)
	user := &elicitor{}
	user.set(reply("accept", true))
	cs := connectVia(t, ctx, newReplicas(t, endpointA, endpointB), newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}))

	if got := call(t, ctx, cs, "delete", `{"text":"notes"}`); got.IsError || text(got) != "deleted notes" {
		t.Fatalf("delete: isError %v, text %q", got.IsError, text(got))
	}
	if got := a.audit.codesOf(t, "delete", 1); len(got) != 1 || got[0] != pipeline.CodeAborted {
		t.Fatalf("replica A recorded %v, want [ABORTED]", got)
	}
	if got := b.audit.codesOf(t, "delete", 1); len(got) != 1 || got[0] != codeOK {
		t.Fatalf("replica B recorded %v, want [ok]", got)
	}

	t.Run("a replica with another key refuses", func(t *testing.T) {
		other, endpointC := statelessFixture(t, stateKey(t))
		cs := connectVia(t, ctx, newReplicas(t, endpointA, endpointC), newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}))
		refused(t, ctx, cs)
		if got := other.audit.codesOf(t, "delete", 0); len(got) != 0 {
			t.Fatalf("the refusing replica ran delete: %v", got)
		}
	})
}

// A requestState changed on the way, replayed, or sent with other
// arguments is refused, and the call does not run.
func TestStatelessStateRefused(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	f, endpoint := statelessFixture(t, stateKey(t))
	user := &elicitor{}
	user.set(reply("accept", true))

	t.Run("tampered", func(t *testing.T) {
		r := newReplicas(t, endpoint, endpoint)
		r.tamper = true
		refused(t, ctx, connectVia(t, ctx, r, newClient(&mcp.ClientOptions{ElicitationHandler: user.handle})))
	})

	// The client's own retry loop is off here, to send retries by hand.
	r := newReplicas(t, endpoint, endpoint)
	manual := newClient(&mcp.ClientOptions{ElicitationHandler: user.handle, MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true}})
	cs := connectVia(t, ctx, r, manual)
	first := call(t, ctx, cs, "delete", `{"text":"notes"}`)
	if first.RequestState == "" || len(first.InputRequests) != 1 {
		t.Fatalf("delete: not input-required: %+v", first)
	}
	yes := mcp.InputResponseMap{"approval": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}}
	retry := func(args string) (*mcp.CallToolResult, error) {
		return cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete", Arguments: json.RawMessage(args), RequestState: first.RequestState, InputResponses: yes})
	}
	t.Run("other arguments", func(t *testing.T) {
		if _, err := retry(`{"text":"everything"}`); err == nil || !strings.Contains(err.Error(), "requestState") {
			t.Fatalf("retry with other arguments: %v", err)
		}
	})
	t.Run("same arguments, another spelling", func(t *testing.T) {
		got, err := retry(` { "text" : "notes" } `)
		if err != nil || got.IsError || text(got) != "deleted notes" {
			t.Fatalf("retry: %v, %+v", err, got)
		}
	})
	t.Run("replayed", func(t *testing.T) {
		if _, err := retry(`{"text":"notes"}`); err == nil || !strings.Contains(err.Error(), "requestState") {
			t.Fatalf("replayed retry: %v", err)
		}
	})
	if got := f.audit.codesOf(t, "delete", 3); countCode(got, codeOK) != 1 {
		t.Fatalf("delete recorded %v, want one OK", got)
	}
}

// An answer that comes after the approval timeout does not approve: its
// retry is refused as late, and the call does not run.
func TestStatelessApprovalTimeout(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	f, endpoint := statelessFixtureTimeout(t, stateKey(t), 300*time.Millisecond)
	user := &elicitor{}
	// The user answers, yes, but too late.
	user.set(func(ctx context.Context) (*mcp.ElicitResult, error) {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}, nil
		}
	})
	cs := connectVia(t, ctx, newReplicas(t, endpoint, endpoint), newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}))
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete", Arguments: json.RawMessage(`{"text":"notes"}`)})
	if err == nil || !strings.Contains(err.Error(), "after the approval timeout") {
		t.Fatalf("late retry: %v, want it refused as late", err)
	}
	if got := f.audit.codesOf(t, "delete", 1); countCode(got, codeOK) != 0 {
		t.Fatalf("delete recorded %v, want it never run", got)
	}
}

// refused makes a call that asks and expects its retry refused.
func refused(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "delete", Arguments: json.RawMessage(`{"text":"notes"}`)})
	if err == nil || !strings.Contains(err.Error(), "requestState is not one this gateway issued") {
		t.Fatalf("retry: %v, want the requestState refused", err)
	}
}

func countCode(codes []pipeline.Code, c pipeline.Code) int {
	n := 0
	for _, got := range codes {
		if got == c {
			n++
		}
	}
	return n
}

// A 2025-11-25 client on the same listener keeps its session and is asked
// by elicitation/create within it.
func TestStatelessBesideSessions(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	f, endpoint := statelessFixture(t, stateKey(t))
	r := newReplicas(t, endpoint, endpoint)
	user := &elicitor{}
	user.set(reply("accept", true))
	old, err := newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: &http.Client{Transport: r}}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()
	if old.ID() == "" {
		t.Fatal("a 2025-11-25 client got no session")
	}
	newer := connectVia(t, ctx, r, newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}))
	for _, cs := range []*mcp.ClientSession{old, newer} {
		if got := call(t, ctx, cs, "delete", `{"text":"notes"}`); got.IsError || text(got) != "deleted notes" {
			t.Fatalf("delete: isError %v, text %q", got.IsError, text(got))
		}
	}
	r.mu.Lock()
	retries := r.retries
	r.mu.Unlock()
	if retries != 1 {
		t.Fatalf("%d retries with a requestState, want 1 (the 2026-07-28 client's)", retries)
	}
	// The session client's call asked within the call: one line, OK.
	if got := f.audit.codesOf(t, "delete", 3); len(got) != 3 || got[0] != codeOK {
		t.Fatalf("delete recorded %v, want [ok, ABORTED, ok]", got)
	}
}

// codesOf returns the codes the audit recorded for tool, once it has
// recorded at least n of them (observers may see a call after its
// result went out).
func (a *audit) codesOf(t *testing.T, tool string, n int) []pipeline.Code {
	t.Helper()
	var codes []pipeline.Code
	testkit.Eventually(10*time.Second, func() bool {
		codes = codes[:0]
		a.mu.Lock()
		for _, r := range a.recs {
			if r.Tool == tool {
				codes = append(codes, r.Code)
			}
		}
		a.mu.Unlock()
		return len(codes) >= n
	})
	return codes
}

// codeOK is the code of a call that succeeded.
const codeOK pipeline.Code = ""

// A 2026-07-28 client learns of a change of the tools on its
// subscriptions/listen stream, and that stream, which answers no call,
// does not hold up a drain.
func TestStatelessListenAndDrain(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	f, endpoint := statelessFixture(t, stateKey(t))
	changed := make(chan struct{}, 16)
	cs := connectVia(t, ctx, newReplicas(t, endpoint, endpoint), newClient(&mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}))
	if err := f.h.Kernel().Restart("demo", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no notifications/tools/list_changed on the listen stream")
	}
	if got := call(t, ctx, cs, "echo", `{"text":"hi"}`); got.IsError {
		t.Fatalf("echo: %q", text(got))
	}
	if err := f.h.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := f.srv.Drain(dctx); err != nil {
		t.Fatalf("drain with a listen stream open: %v", err)
	}
}

// A key rotated in (UseStateKeys again, as a reload does) opens states the
// other replica sealed with it, while the replica seals with its own first
// key.
func TestStatelessKeyRotation(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	oldKey, newKey := stateKey(t), stateKey(t)
	_, endpointA := statelessFixture(t, oldKey)
	b, endpointB := statelessFixture(t, newKey)
	user := &elicitor{}
	user.set(reply("accept", true))
	cs := connectVia(t, ctx, newReplicas(t, endpointA, endpointB), newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}))
	refused(t, ctx, cs)
	if err := b.srv.UseStateKeys(append(newKey, oldKey...)); err != nil {
		t.Fatal(err)
	}
	if got := call(t, ctx, cs, "delete", `{"text":"notes"}`); got.IsError || text(got) != "deleted notes" {
		t.Fatalf("delete after the rotation: isError %v, text %q", got.IsError, text(got))
	}
	if err := b.srv.UseStateKeys([][]byte{[]byte("short")}); err == nil {
		t.Fatal("a 5-byte key was taken")
	}
	// The keys in use stay: B still opens A's states.
	if got := call(t, ctx, cs, "delete", `{"text":"drafts"}`); got.IsError || text(got) != "deleted drafts" {
		t.Fatalf("delete after a refused key: isError %v, text %q", got.IsError, text(got))
	}
}
