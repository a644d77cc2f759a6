package main

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A bridged server's elicitation for a 2026-07-28 client over streamable
// HTTP, served without a session, becomes the call's input-required
// result: the client's retry carries the answer, the call runs again, and
// the answer reaches the server when it asks the same question again.

// serveMCPOn adds an mcp address on a free loopback port to config's host
// block and returns the address.
func serveMCPOn(t *testing.T, config string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "host {\n") {
		t.Fatalf("no host block in %s", data)
	}
	if err := os.WriteFile(config, []byte(strings.Replace(string(data), "host {\n", "host {\n  mcp = \""+addr+"\"\n", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	return addr
}

// sessionWatch is an HTTP transport that notes every Mcp-Session-Id sent
// or received.
type sessionWatch struct {
	rt *http.Transport

	mu       sync.Mutex
	sessions []string
}

func (w *sessionWatch) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := w.rt.RoundTrip(req)
	w.mu.Lock()
	defer w.mu.Unlock()
	if id := req.Header.Get("Mcp-Session-Id"); id != "" {
		w.sessions = append(w.sessions, id)
	}
	if err == nil && res.Header.Get("Mcp-Session-Id") != "" {
		w.sessions = append(w.sessions, res.Header.Get("Mcp-Session-Id"))
	}
	return res, err
}

func TestElicitationInputRequired(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	// Without trust_hints every tool of the server counts as destructive,
	// so the safety plugin asks first: the call asks two questions, the
	// host's and then the server's, across two retries.
	config := deployment(t, dir, fmt.Sprintf(`
plugin "everything" {
  path = %q
  config {
    command = [%q]
    prefix  = "ev"
  }
}
`, bin("plugins/mcp"), npmServer(t, "mcp-server-everything"))+safetyBlock(""))
	addr := serveMCPOn(t, config)
	h := startHost(t, config, 3)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	watch := &sessionWatch{rt: &http.Transport{}}
	defer watch.rt.CloseIdleConnections()
	user := &elicitUser{}
	client := mcp.NewClient(&mcp.Implementation{Name: "new-agent", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: user.handle,
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{
			Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{},
		}},
	})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + addr + "/mcp", HTTPClient: &http.Client{Transport: watch}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, h.log)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s, want 2026-07-28", v)
	}
	waitFor(t, 60*time.Second, "the server's elicitation tools", func() bool {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, tool := range res.Tools {
			if tool.Name == "ev_trigger-elicitation-request" || tool.Name == "ev_trigger-url-elicitation" {
				n++
			}
		}
		return n == 2
	}, h.log.String)

	approve := &mcp.ElicitResult{Action: "accept", Content: map[string]any{"approve": true}}
	call := func(t *testing.T, tool string, args map[string]any, answers ...*mcp.ElicitResult) (string, []*mcp.ElicitParams) {
		t.Helper()
		before := len(user.questions())
		user.mu.Lock()
		user.answers = answers
		user.mu.Unlock()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s: %v %+v\nhost log:\n%s", tool, err, res, h.log)
		}
		return allText(res), user.questions()[before:]
	}

	t.Run("form", func(t *testing.T) {
		got, asked := call(t, "ev_trigger-elicitation-request", map[string]any{},
			approve, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ann Example", "check": true}})
		if !strings.Contains(got, "- Name: Ann Example") || !strings.Contains(got, "- Agreed to terms: true") {
			t.Errorf("the server's result does not carry the client's answer:\n%s\nhost log:\n%s", got, h.log)
		}
		if len(asked) != 2 || !strings.Contains(asked[0].Message, "Approve this call?") ||
			asked[1].Mode != "form" || !strings.Contains(asked[1].Message, "Please provide inputs") || asked[1].RequestedSchema == nil {
			t.Fatalf("the client was asked %+v, want the host's approval, then the server's form", asked)
		}
	})
	t.Run("url", func(t *testing.T) {
		got, asked := call(t, "ev_trigger-url-elicitation", map[string]any{"url": "https://example.com/consent"},
			approve, &mcp.ElicitResult{Action: "accept"})
		if !strings.Contains(got, "User completed the URL elicitation flow") {
			t.Errorf("url: %s\nhost log:\n%s", got, h.log)
		}
		if len(asked) != 2 || asked[1].Mode != "url" || asked[1].URL != "https://example.com/consent" || asked[1].ElicitationID == "" {
			t.Fatalf("the client was asked %+v, want the approval, then the URL", asked)
		}
	})
	t.Run("decline", func(t *testing.T) {
		got, _ := call(t, "ev_trigger-elicitation-request", map[string]any{}, approve, &mcp.ElicitResult{Action: "decline"})
		if !strings.Contains(got, "User declined") {
			t.Errorf("decline: %s", got)
		}
	})

	watch.mu.Lock()
	if len(watch.sessions) != 0 {
		t.Errorf("session ids %q went over HTTP; want none", watch.sessions)
	}
	watch.mu.Unlock()
	// Each call ran three times: the first asked the host's question, the
	// second (approved) the server's, the third had both answers. Only
	// the last ran to the end; the audit records that its question was
	// answered, never what.
	want := []string{`[{"mode":"form","action":"accept"}]`, `[{"mode":"url","action":"accept"}]`, `[{"mode":"form","action":"decline"}]`}
	waitFor(t, 30*time.Second, "the audit lines", func() bool {
		n := 0
		for _, l := range audit(t, dir) {
			if strings.HasPrefix(l.Tool, "ev_trigger-") {
				n++
			}
		}
		return n >= 9
	})
	var codes, finals []string
	all := elicitationsAudited(t, dir)
	for i, l := range auditTriggers(t, dir) {
		if l.OK {
			codes = append(codes, "ok")
			finals = append(finals, all[i])
		} else {
			codes = append(codes, l.Code)
		}
	}
	if got := strings.Join(codes, " "); got != "ABORTED ABORTED ok ABORTED ABORTED ok ABORTED ABORTED ok" {
		t.Errorf("the audit's outcomes of the three calls: %s", got)
	}
	if strings.Join(finals, "\n") != strings.Join(want, "\n") {
		t.Errorf("the audit's questions of the calls that ran to the end:\n%s\nwant\n%s", strings.Join(finals, "\n"), strings.Join(want, "\n"))
	}
	if data, err := os.ReadFile(dir + "/run/audit.log"); err != nil || strings.Contains(string(data), "Ann Example") {
		t.Errorf("the audit log cannot be read (%v) or carries the content of an answer", err)
	}
}

// auditTriggers are the audit lines of calls of the server's elicitation
// tools, in order.
func auditTriggers(t *testing.T, dir string) []auditLine {
	var out []auditLine
	for _, l := range audit(t, dir) {
		if strings.HasPrefix(l.Tool, "ev_trigger-") {
			out = append(out, l)
		}
	}
	return out
}

// toReplicas sends a request that carries a requestState (a retry) to
// retry and every other to first, as a load balancer without affinity
// may.
type toReplicas struct {
	first, retry string
	rt           *http.Transport
}

func (r *toReplicas) RoundTrip(req *http.Request) (*http.Response, error) {
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
	if bytes.Contains(body, []byte(`"requestState"`)) {
		out.URL.Host, out.Host = r.retry, r.retry
	}
	out.Body = io.NopCloser(bytes.NewReader(body))
	out.ContentLength = int64(len(body))
	return r.rt.RoundTrip(out)
}

// The server's question asked on one replica is answered in a retry that
// reaches another (two hosts, one mcp_state_key): the retry runs the call
// there, and that replica's server gets the answer.
func TestElicitationInputRequiredAcrossReplicas(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	keyFile := filepath.Join(t.TempDir(), "state.key")
	key := make([]byte, 32)
	rand.Read(key)
	if err := os.WriteFile(keyFile, []byte(hex.EncodeToString(key)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	replica := func() (addr, dir string) {
		dir = t.TempDir()
		config := deployment(t, dir, everythingBlock(t))
		addr = serveMCPOn(t, config)
		data, err := os.ReadFile(config)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(config, []byte(strings.Replace(string(data), "host {\n", fmt.Sprintf("host {\n  mcp_state_key = %q\n", keyFile), 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		startHost(t, config, 2)
		return addr, dir
	}
	a, aDir := replica()
	b, bDir := replica()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	rt := &http.Transport{}
	defer rt.CloseIdleConnections()
	user := &elicitUser{answers: []*mcp.ElicitResult{{Action: "accept", Content: map[string]any{"name": "Ann Example", "check": true}}}}
	client := mcp.NewClient(&mcp.Implementation{Name: "new-agent", Version: "1"}, &mcp.ClientOptions{ElicitationHandler: user.handle})
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: "http://" + a + "/mcp", HTTPClient: &http.Client{Transport: &toReplicas{first: a, retry: b, rt: rt}}},
		&mcp.ClientSessionOptions{ProtocolVersion: "2026-07-28"})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "ev_trigger-elicitation-request", Arguments: map[string]any{}})
	if err != nil || res.IsError || !strings.Contains(allText(res), "- Name: Ann Example") {
		t.Fatalf("the call answered on the other replica: %v %+v", err, res)
	}
	if q := user.questions(); len(q) != 1 || q[0].Mode != "form" {
		t.Errorf("the client was asked %+v, want the server's form once", q)
	}
	codes := func(dir, want string) {
		var got string
		waitFor(t, 30*time.Second, "the audit outcomes "+want+" in "+dir, func() bool {
			var c []string
			for _, l := range auditTriggers(t, dir) {
				if l.OK {
					c = append(c, "ok")
				} else {
					c = append(c, l.Code)
				}
			}
			got = strings.Join(c, " ")
			return got == want
		}, func() string { return "got " + got })
	}
	codes(aDir, "ABORTED")
	codes(bDir, "ok")
	if got := elicitationsAudited(t, bDir); len(got) != 1 || got[0] != `[{"mode":"form","action":"accept"}]` {
		t.Errorf("replica B's audit records the question as %q", got)
	}
}
