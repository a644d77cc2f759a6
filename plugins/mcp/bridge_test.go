package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/mcptestserver"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

// The bridge's logic, in process: the test server of mcptestserver over an
// in-memory pipe, and a fake host that records registrations.

// fakeHost records what the bridge registered.
type fakeHost struct {
	mu       sync.Mutex
	tools    map[string]sdk.Tool
	disposed []string
	changed  chan struct{}
	// batches and registered count the bridge's batches and the tools
	// they registered.
	batches, registered int
}

func newFakeHost() *fakeHost {
	return &fakeHost{tools: map[string]sdk.Tool{}, changed: make(chan struct{}, 100)}
}

func (h *fakeHost) register(_ context.Context, t sdk.Tool) (func(context.Context) error, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.tools[t.Name]; ok {
		return nil, fmt.Errorf("tool %q already registered", t.Name)
	}
	h.tools[t.Name] = t
	h.changed <- struct{}{}
	return func(context.Context) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		delete(h.tools, t.Name)
		h.disposed = append(h.disposed, t.Name)
		h.changed <- struct{}{}
		return nil
	}, nil
}

// disposeFunc is the fake host's registration.
type disposeFunc func(context.Context) error

func (f disposeFunc) Dispose(ctx context.Context) error { return f(ctx) }

// batch is the fake's RegisterTools: it disposes drop and registers add,
// counting the batches and the tools registered.
func (h *fakeHost) batch(ctx context.Context, add []sdk.Tool, drop []registration) ([]registration, []error, error) {
	h.mu.Lock()
	h.batches++
	h.registered += len(add)
	h.mu.Unlock()
	for _, r := range drop {
		if err := r.Dispose(ctx); err != nil {
			return nil, nil, err
		}
	}
	regs := make([]registration, len(add))
	var errs []error
	for i, t := range add {
		dispose, err := h.register(ctx, t)
		if err != nil {
			if errs == nil {
				errs = make([]error, len(add))
			}
			errs[i] = err
			continue
		}
		regs[i] = disposeFunc(dispose)
	}
	return regs, errs, nil
}

func (h *fakeHost) names() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Sorted(maps.Keys(h.tools))
}

func (h *fakeHost) tool(name string) (sdk.Tool, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	t, ok := h.tools[name]
	return t, ok
}

// waitFor waits until cond holds.
func (h *fakeHost) waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for !cond() {
		select {
		case <-h.changed:
		case <-time.After(50 * time.Millisecond):
		case <-deadline:
			t.Fatalf("timed out waiting for %s; tools %v", what, h.names())
		}
	}
}

type inMemory struct {
	srv     *mcptestserver.Server
	log     *testkit.Buffer
	session *mcp.ServerSession
	// drop drops the connection under the server, as a server that dies
	// does (the session's Close is a graceful one: it waits for the calls
	// the server is running).
	drop   func()
	host   *fakeHost
	bridge *bridge
	gone   chan error
}

func startInMemory(t *testing.T, cfg Config) *inMemory {
	t.Helper()
	return startInMemoryWith(t, cfg, nil)
}

// startInMemoryWith is startInMemory calling before (when set) with the
// bridge before it starts.
func startInMemoryWith(t *testing.T, cfg Config, before func(*bridge)) *inMemory {
	t.Helper()
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	set, err := check(cfg)
	if err != nil {
		t.Fatal(err)
	}
	m := &inMemory{log: &testkit.Buffer{}, host: newFakeHost(), gone: make(chan error, 1)}
	m.srv = mcptestserver.New(m.log)
	sc, cc := net.Pipe()
	m.drop = func() { _ = sc.Close() }
	st, ct := &mcp.IOTransport{Reader: sc, Writer: sc}, &mcp.IOTransport{Reader: cc, Writer: cc}
	m.session, err = m.srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	m.bridge = newBridge(set, hclog.NewNullLogger(), m.host.batch, func(err error) { m.gone <- err })
	m.bridge.transport = func() (mcp.Transport, *stderrRelay, error) { return ct, nil, nil }
	if before != nil {
		before(m.bridge)
	}
	if err := m.bridge.start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		m.bridge.close()
		_ = m.session.Close()
	})
	return m
}

func (m *inMemory) call(t *testing.T, ctx context.Context, name, args string) (string, error) {
	t.Helper()
	tool, ok := m.host.tool(name)
	if !ok {
		t.Fatalf("no tool %s among %v", name, m.host.names())
	}
	v, err := tool.Execute(ctx, &sdk.Call{Execution: sdk.Execution{Name: name, Arguments: json.RawMessage(args)}})
	if err != nil {
		return "", err
	}
	raw, _ := json.Marshal(v)
	return string(raw), nil
}

func TestBridgeRegistersAndCalls(t *testing.T) {
	m := startInMemory(t, Config{Command: []string{"unused"}, Prefix: strPtr("t"), Timeout: "5s", TrustHints: true})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	want := []string{"t_calls", "t_echo", "t_fail", "t_remove_tool", "t_set_tool", "t_wait", "t_wipe"}
	if got := m.host.names(); !slices.Equal(got, want) {
		t.Fatalf("registered %v, want %v", got, want)
	}
	t.Run("hints and timeout", func(t *testing.T) {
		echo, _ := m.host.tool("t_echo")
		if !echo.ReadOnly || echo.Destructive || !echo.Idempotent || echo.Timeout != 5*time.Second || echo.Description != "Echoes message." {
			t.Errorf("t_echo %+v", echo)
		}
		if !strings.Contains(echo.Parameters, `"required":["message"]`) {
			t.Errorf("t_echo parameters %s", echo.Parameters)
		}
		wipe, _ := m.host.tool("t_wipe")
		if wipe.ReadOnly || !wipe.Destructive || wipe.Idempotent {
			t.Errorf("t_wipe (no annotations) %+v, want destructive as MCP's defaults say", wipe)
		}
	})
	t.Run("value", func(t *testing.T) {
		got, err := m.call(t, ctx, "t_echo", `{"message":"hi"}`)
		if err != nil || got != `{"content":[{"type":"text","text":"Echo: hi"}]}` {
			t.Fatalf("t_echo: %s, %v", got, err)
		}
		got, err = m.call(t, ctx, "t_calls", `{}`)
		if err != nil || got != `{"content":[{"type":"text","text":"1"}],"structuredContent":{"calls":1}}` {
			t.Fatalf("t_calls: %s, %v", got, err)
		}
	})
	t.Run("isError", func(t *testing.T) {
		_, err := m.call(t, ctx, "t_fail", `{}`)
		if err == nil || err.Error() != "it failed, as asked" {
			t.Fatalf("t_fail: %v", err)
		}
	})
	t.Run("cancel reaches the server", func(t *testing.T) {
		cctx, ccancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := m.call(t, cctx, "t_wait", `{}`)
			errc <- err
		}()
		for m.srv.Calls() < 3 { // echo, calls, fail, then wait
			time.Sleep(5 * time.Millisecond)
		}
		time.Sleep(50 * time.Millisecond)
		ccancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("t_wait cancelled: %v", err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for !strings.Contains(m.log.String(), "wait: cancelled by the client") {
			if time.Now().After(deadline) {
				t.Fatalf("the server never saw the cancellation; its log: %q", m.log.String())
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

func TestBridgeFollowsListChanged(t *testing.T) {
	m := startInMemory(t, Config{Command: []string{"unused"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	has := func(name string) func() bool {
		return func() bool { _, ok := m.host.tool(name); return ok }
	}
	t.Run("added", func(t *testing.T) {
		if _, err := m.call(t, ctx, "set_tool", `{"name":"late","description":"first"}`); err != nil {
			t.Fatal(err)
		}
		m.host.waitFor(t, "late registered", has("late"))
		if got, err := m.call(t, ctx, "late", `{}`); err != nil || !strings.Contains(got, "I am late") {
			t.Fatalf("late: %s %v", got, err)
		}
	})
	t.Run("changed", func(t *testing.T) {
		if _, err := m.call(t, ctx, "set_tool", `{"name":"late","description":"second"}`); err != nil {
			t.Fatal(err)
		}
		m.host.waitFor(t, "late's new description", func() bool {
			tool, ok := m.host.tool("late")
			return ok && tool.Description == "second"
		})
	})
	t.Run("removed", func(t *testing.T) {
		if _, err := m.call(t, ctx, "remove_tool", `{"name":"late"}`); err != nil {
			t.Fatal(err)
		}
		m.host.waitFor(t, "late disposed", func() bool { return !has("late")() })
	})
	if got := m.host.names(); !slices.Equal(got, []string{"calls", "echo", "fail", "remove_tool", "set_tool", "wait", "wipe"}) {
		t.Errorf("tools at the end %v", got)
	}
}

func TestBridgeToolFilters(t *testing.T) {
	m := startInMemory(t, Config{Command: []string{"unused"}, Tools: []ToolFilter{{Enabled: []string{"e*", "w*"}}, {Disabled: []string{"wait"}}}})
	if got := m.host.names(); !slices.Equal(got, []string{"echo", "wipe"}) {
		t.Fatalf("registered %v, want [echo wipe]", got)
	}
}

func TestBridgeServerGone(t *testing.T) {
	m := startInMemory(t, Config{Command: []string{"unused"}})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		_, err := m.call(t, ctx, "wait", `{}`)
		errc <- err
	}()
	for m.srv.Calls() < 1 {
		time.Sleep(5 * time.Millisecond)
	}
	m.drop() // the server goes away mid-call
	select {
	case err := <-m.gone:
		if !errors.Is(err, errServerGone) {
			t.Errorf("onGone cause %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("onGone did not run")
	}
	if err := <-errc; !errors.Is(err, errServerGone) {
		t.Errorf("call in flight: %v, want the server-gone cause", err)
	}
	if _, err := m.call(t, ctx, "echo", `{"message":"x"}`); !errors.Is(err, errServerGone) {
		t.Errorf("call after: %v, want the server-gone cause", err)
	}
}

func TestCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		want string // "" for ok
	}{
		{"command", Config{Command: []string{"srv"}, Env: map[string]string{"A": "b"}}, ""},
		{"url with headers", Config{URL: "https://example.com/mcp", Headers: []map[string]string{{"Authorization": "x"}}}, ""},
		{"neither", Config{}, "set command (a stdio server) or url"},
		{"both", Config{Command: []string{"srv"}, URL: "http://x/mcp"}, "not both"},
		{"empty program", Config{Command: []string{""}}, "the program is empty"},
		{"headers with command", Config{Command: []string{"srv"}, Headers: []map[string]string{{"A": "b"}}}, "headers apply to url only"},
		{"env with url", Config{URL: "http://x/mcp", Env: map[string]string{"A": "b"}}, "env applies to command only"},
		{"bad url", Config{URL: "ftp://x"}, "not an http or https URL"},
		{"bad timeout", Config{Command: []string{"srv"}, Timeout: "soon"}, `timeout "soon"`},
		{"bad glob", Config{Command: []string{"srv"}, Tools: []ToolFilter{{Enabled: []string{"[a"}}}}, `"[a" is not a valid glob`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := check(tc.cfg)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestServerEnv(t *testing.T) {
	t.Setenv("PATH", "/p")
	t.Setenv("HOME", "/h")
	t.Setenv("SECRET_TOKEN", "leak")
	for _, k := range proxyVars {
		t.Setenv(k, "")
	}
	got := serverEnv(map[string]string{"LOG_LEVEL": "warn"})
	slices.Sort(got)
	if want := []string{"HOME=/h", "LOG_LEVEL=warn", "PATH=/p"}; !slices.Equal(got, want) {
		t.Errorf("env %v, want %v", got, want)
	}
	got = serverEnv(map[string]string{"PATH": "/mine"})
	slices.Sort(got)
	if want := []string{"HOME=/h", "PATH=/mine"}; !slices.Equal(got, want) {
		t.Errorf("env %v, want %v", got, want)
	}
}

// TestServerEnvProxy: a bridge with an egress list passes its proxy
// variables to its server, which has no other way out; one the block
// declares wins.
func TestServerEnvProxy(t *testing.T) {
	t.Setenv("PATH", "/p")
	t.Setenv("HOME", "/h")
	for _, k := range proxyVars {
		t.Setenv(k, "")
	}
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:3128")
	t.Setenv("NO_PROXY", "localhost")
	got := serverEnv(map[string]string{"NO_PROXY": "mine"})
	slices.Sort(got)
	if want := []string{"HOME=/h", "HTTPS_PROXY=http://127.0.0.1:3128", "NO_PROXY=mine", "PATH=/p"}; !slices.Equal(got, want) {
		t.Errorf("env %v, want %v", got, want)
	}
}

func TestErrorText(t *testing.T) {
	for _, tc := range []struct {
		name string
		res  *mcp.CallToolResult
		want string
	}{
		{"text blocks", &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "a"}, &mcp.TextContent{Text: "b"}}}, "a\nb"},
		{"no text", &mcp.CallToolResult{Content: []mcp.Content{&mcp.ImageContent{MIMEType: "image/png", Data: []byte{1}}}}, `the server reported an error: [{"type":"image"`},
		{"nothing", &mcp.CallToolResult{}, "the server reported an error without saying why"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errorText(tc.res); !strings.HasPrefix(got, tc.want) {
				t.Errorf("%q, want %q", got, tc.want)
			}
		})
	}
}

func strPtr(s string) *string { return &s }
