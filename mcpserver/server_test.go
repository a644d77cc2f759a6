package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Each test runs over every transport: the same client code against stdio
// (both ways of asking) and streamable HTTP.
func forEachTransport(t *testing.T, test func(t *testing.T, tr transport)) {
	for _, tr := range transports {
		t.Run(tr.name, func(t *testing.T) {
			leakCheck(t)
			test(t, tr)
		})
	}
}

func newClient(opts *mcp.ClientOptions) *mcp.Client {
	return mcp.NewClient(&mcp.Implementation{Name: "test-agent", Version: "1"}, opts)
}

func call(t *testing.T, ctx context.Context, cs *mcp.ClientSession, tool, args string) *mcp.CallToolResult {
	t.Helper()
	r, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: json.RawMessage(args)})
	if err != nil {
		t.Fatalf("call %s %s: protocol error %v (a pipeline outcome must be a tool result)", tool, args, err)
	}
	return r
}

func TestListAndCall(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr transport) {
		ctx := testkit.Context(t)
		f := newFixture(t, 5*time.Second)
		cs := tr.connect(t, ctx, f.srv, newClient(nil), tr.version)

		t.Run("tools/list is the registry", func(t *testing.T) {
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			tools := map[string]*mcp.Tool{}
			var names []string
			for _, tool := range res.Tools {
				tools[tool.Name] = tool
				names = append(names, tool.Name)
			}
			if want := []string{"add", "delete", "echo", "secret", "wait"}; !slices.Equal(names, want) {
				t.Fatalf("tools %v, want %v", names, want)
			}
			echo := tools["echo"]
			if echo.Description != "Echo the text back." {
				t.Errorf("echo description %q", echo.Description)
			}
			if !sameJSON(t, echo.InputSchema, textSchema) {
				t.Errorf("echo inputSchema %v, want the parameters %s", echo.InputSchema, textSchema)
			}
			a := echo.Annotations
			if a == nil || !a.ReadOnlyHint || !a.IdempotentHint || a.DestructiveHint == nil || *a.DestructiveHint {
				t.Errorf("echo annotations %+v, want read-only, idempotent, not destructive", a)
			}
			if d := tools["delete"].Annotations; d == nil || d.DestructiveHint == nil || !*d.DestructiveHint || d.ReadOnlyHint {
				t.Errorf("delete annotations %+v, want destructive", d)
			}
			if echo.Meta["plugkit/owner"] != "demo" {
				t.Errorf("echo _meta %v, want plugkit/owner demo", echo.Meta)
			}
			// A schema without a type is served as an object schema.
			if !sameJSON(t, tools["add"].InputSchema, `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`) {
				t.Errorf("add inputSchema %v", tools["add"].InputSchema)
			}
		})

		t.Run("ok", func(t *testing.T) {
			r := call(t, ctx, cs, "echo", `{"text":"hello"}`)
			if r.IsError || text(r) != "hello" {
				t.Fatalf("echo: isError %v, text %q", r.IsError, text(r))
			}
			rec := f.audit.waitFor(t, "echo")
			if !strings.HasPrefix(rec.Caller, "mcp#") || rec.Code != "" {
				t.Errorf("pipeline saw %+v, want an ok call by mcp#N", rec)
			}
			r = call(t, ctx, cs, "add", `{"a":1,"b":2}`)
			if r.IsError || !sameJSON(t, r.StructuredContent, `{"sum":3}`) || !sameJSON(t, json.RawMessage(text(r)), `{"sum":3}`) {
				t.Fatalf("add: isError %v, text %q, structured %v", r.IsError, text(r), r.StructuredContent)
			}
		})

		t.Run("DENIED is a tool result with the reason and who decided", func(t *testing.T) {
			r := call(t, ctx, cs, "secret", `{}`)
			if want := "DENIED: secrets are off limits (decided by policy)"; !r.IsError || text(r) != want {
				t.Fatalf("secret: isError %v, text %q, want %q", r.IsError, text(r), want)
			}
			if r.Meta["plugkit/code"] != "DENIED" || r.Meta["plugkit/decided_by"] != "policy" {
				t.Errorf("secret _meta %v", r.Meta)
			}
		})

		t.Run("INVALID_ARGUMENTS is a tool result", func(t *testing.T) {
			r := call(t, ctx, cs, "echo", `{"text":5}`)
			if !r.IsError || !strings.HasPrefix(text(r), "INVALID_ARGUMENTS: ") || !strings.Contains(text(r), "/text") {
				t.Fatalf("echo with a number: isError %v, text %q", r.IsError, text(r))
			}
			r = call(t, ctx, cs, "echo", `{}`)
			if !r.IsError || !strings.HasPrefix(text(r), "INVALID_ARGUMENTS: ") {
				t.Fatalf("echo without text: isError %v, text %q", r.IsError, text(r))
			}
		})

		t.Run("each session is its own caller", func(t *testing.T) {
			other := tr.connect(t, ctx, f.srv, newClient(nil), tr.version)
			if r := call(t, ctx, other, "add", `{"a":2,"b":2}`); r.IsError {
				t.Fatal(text(r))
			}
			f.audit.mu.Lock()
			defer f.audit.mu.Unlock()
			callers := map[string]bool{}
			for _, rec := range f.audit.recs {
				callers[rec.Caller] = true
			}
			if len(callers) != 2 {
				t.Errorf("callers %v, want two mcp#N", callers)
			}
		})
	})
}

func TestApproval(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr transport) {
		ctx := testkit.Context(t)
		f := newFixture(t, 5*time.Second)
		user := &elicitor{}
		cs := tr.connect(t, ctx, f.srv, newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}), tr.version)

		t.Run("granted", func(t *testing.T) {
			user.set(reply("accept", true))
			r := call(t, ctx, cs, "delete", `{"text":"notes"}`)
			if r.IsError || text(r) != "deleted notes" {
				t.Fatalf("delete: isError %v, text %q", r.IsError, text(r))
			}
			q := user.asked()
			if len(q) != 1 || !strings.Contains(q[0], "delete is destructive") || !strings.Contains(q[0], `{"text":"notes"}`) {
				t.Fatalf("the user was asked %q", q)
			}
		})
		t.Run("refused", func(t *testing.T) {
			user.set(reply("accept", false))
			r := call(t, ctx, cs, "delete", `{"text":"notes"}`)
			if want := "DENIED: approver host refused: delete is destructive (decided by host)"; !r.IsError || text(r) != want {
				t.Fatalf("delete: isError %v, text %q, want %q", r.IsError, text(r), want)
			}
		})
		t.Run("declined", func(t *testing.T) {
			user.set(reply("decline", false))
			r := call(t, ctx, cs, "delete", `{"text":"notes"}`)
			if !r.IsError || !strings.HasPrefix(text(r), "DENIED: approver host refused") {
				t.Fatalf("delete: isError %v, text %q", r.IsError, text(r))
			}
		})
		t.Run("a client without elicitation is denied", func(t *testing.T) {
			mute := tr.connect(t, ctx, f.srv, newClient(nil), tr.version)
			r := call(t, ctx, mute, "delete", `{"text":"notes"}`)
			if !r.IsError || !strings.HasPrefix(text(r), "DENIED: ") || !strings.Contains(text(r), "approval needed") {
				t.Fatalf("delete: isError %v, text %q", r.IsError, text(r))
			}
		})
	})
}

func TestApprovalTimeout(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr transport) {
		ctx := testkit.Context(t)
		f := newFixture(t, 300*time.Millisecond)
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
		cs := tr.connect(t, ctx, f.srv, newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}), tr.version)
		r := call(t, ctx, cs, "delete", `{"text":"notes"}`)
		if !r.IsError || !strings.HasPrefix(text(r), "DENIED: approval timed out after 300ms") {
			t.Fatalf("delete: isError %v, text %q", r.IsError, text(r))
		}
	})
}

func TestCancel(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr transport) {
		ctx := testkit.Context(t)
		f := newFixture(t, 5*time.Second)
		cs := tr.connect(t, ctx, f.srv, newClient(nil), tr.version)

		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
			errc <- err
		}()
		select {
		case <-f.demo.started:
		case <-ctx.Done():
			t.Fatal("the tool did not start")
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool: %v, want context.Canceled", err)
		}
		select {
		case <-f.demo.cancelled:
		case <-time.After(10 * time.Second):
			t.Fatal("the tool's context was not cancelled")
		}
		if rec := f.audit.waitFor(t, "wait"); rec.Code != pipeline.CodeAborted {
			t.Errorf("pipeline outcome %+v, want ABORTED", rec)
		}
	})
}

// A request cancelled while its user is being asked ends the call ABORTED.
// Only a session that is asked during the request can tell: an
// input-required result has ended its request before the user answers.
func TestCancelWhileAsked(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr transport) {
		if tr.version == "" && tr.name != "http" {
			t.Skip("2026-07-28 asks through an input-required result: the request is over while the user is asked")
		}
		ctx := testkit.Context(t)
		f := newFixture(t, 10*time.Second)
		asked := make(chan struct{}, 1)
		release := make(chan struct{})
		user := &elicitor{}
		user.set(func(ctx context.Context) (*mcp.ElicitResult, error) {
			asked <- struct{}{}
			// The server's cancellation of the question reaches a stdio
			// client; over HTTP it would travel on the cancelled request's
			// stream, so the test lets the user go once the call is over.
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-release:
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
		})
		cs := tr.connect(t, ctx, f.srv, newClient(&mcp.ClientOptions{ElicitationHandler: user.handle}), tr.version)
		var once sync.Once
		t.Cleanup(func() { once.Do(func() { close(release) }) })
		cctx, cancel := context.WithCancel(ctx)
		errc := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(cctx, &mcp.CallToolParams{Name: "delete", Arguments: map[string]any{"text": "notes"}})
			errc <- err
		}()
		select {
		case <-asked:
		case <-ctx.Done():
			t.Fatal("the user was not asked")
		}
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Errorf("CallTool: %v, want context.Canceled", err)
		}
		if rec := f.audit.waitFor(t, "delete"); rec.Code != pipeline.CodeAborted {
			t.Errorf("pipeline outcome %+v, want ABORTED", rec)
		}
	})
}

func TestListChanged(t *testing.T) {
	forEachTransport(t, func(t *testing.T, tr transport) {
		ctx := testkit.Context(t)
		f := newFixture(t, 5*time.Second)
		changed := make(chan struct{}, 16)
		cs := tr.connect(t, ctx, f.srv, newClient(&mcp.ClientOptions{
			ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
		}), tr.version)
		names := func() []string {
			res, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var out []string
			for _, tool := range res.Tools {
				out = append(out, tool.Name)
			}
			return out
		}
		// expect waits for a notification, then for the list to be want.
		expect := func(t *testing.T, want ...string) {
			t.Helper()
			select {
			case <-changed:
			case <-time.After(10 * time.Second):
				t.Fatal("no notifications/tools/list_changed")
			}
			deadline := time.Now().Add(5 * time.Second)
			for got := names(); !slices.Equal(got, want); got = names() {
				if time.Now().After(deadline) {
					t.Fatalf("tools %v, want %v", got, want)
				}
				time.Sleep(20 * time.Millisecond)
			}
			// Let the debounced notifications of this step arrive before
			// the next step.
			time.Sleep(100 * time.Millisecond)
			for len(changed) > 0 {
				<-changed
			}
		}
		all := []string{"add", "delete", "echo", "secret", "wait"}

		t.Run("a reload with the same tools", func(t *testing.T) {
			if err := f.h.Kernel().Restart("demo", nil); err != nil {
				t.Fatal(err)
			}
			expect(t, all...)
		})
		t.Run("a reload with a new tool", func(t *testing.T) {
			f.demo.mu.Lock()
			f.demo.extra = true
			f.demo.mu.Unlock()
			if err := f.h.Kernel().Restart("demo", nil); err != nil {
				t.Fatal(err)
			}
			expect(t, "add", "delete", "echo", "extra", "secret", "wait")
		})
		t.Run("the plugin goes", func(t *testing.T) {
			if err := f.h.Kernel().Unload("demo"); err != nil {
				t.Fatal(err)
			}
			expect(t)
		})
		t.Run("a plugin comes", func(t *testing.T) {
			if _, err := f.h.Kernel().Load(f.demo.plugin()); err != nil {
				t.Fatal(err)
			}
			expect(t, "add", "delete", "echo", "extra", "secret", "wait")
		})
		t.Run("a tool MCP cannot describe is left out", func(t *testing.T) {
			odd := kernel.Plugin{Name: "odd", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
				reg, err := pipeline.RegistrarOf(s)
				if err != nil {
					return err
				}
				_, err = reg.Register(pipeline.Tool{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "scalar", Description: "Takes a string.", Parameters: json.RawMessage(`{"type":"string"}`),
					},
					Execute: func(context.Context, *pipeline.Execution) (any, error) { return "", nil },
				})
				if err != nil {
					return err
				}
				_, err = reg.Register(pipeline.Tool{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "plain", Description: "Takes anything.",
					},
					Execute: func(context.Context, *pipeline.Execution) (any, error) { return "plain", nil },
				})
				return err
			}}
			if _, err := f.h.Kernel().Load(odd); err != nil {
				t.Fatal(err)
			}
			expect(t, "add", "delete", "echo", "extra", "plain", "secret", "wait")
		})
	})
}

// Shutdown ends the calls in flight: the tool's context is cancelled and the
// pipeline sees ABORTED.
func TestShutdownAbortsCalls(t *testing.T) {
	leakCheck(t)
	ctx := testkit.Context(t)
	f := newFixture(t, 5*time.Second)
	cs := connectStdio(t, ctx, f.srv, newClient(nil), "")
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answers := make(chan answer, 1)
	go func() {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}})
		answers <- answer{res, err}
	}()
	<-f.demo.started
	if err := f.srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	select {
	case <-f.demo.cancelled:
	case <-time.After(10 * time.Second):
		t.Fatal("the tool's context was not cancelled")
	}
	if rec := f.audit.waitFor(t, "wait"); rec.Code != pipeline.CodeAborted {
		t.Errorf("pipeline outcome %+v, want ABORTED", rec)
	}
	// The session closes as the aborted call ends: the client gets either
	// the connection's end or, when the result won the race, ABORTED.
	if a := <-answers; a.err == nil && (!a.res.IsError || !strings.HasPrefix(text(a.res), "ABORTED")) {
		t.Errorf("the call returned %s after the server shut down", text(a.res))
	}
}

func sameJSON(t *testing.T, got any, want string) bool {
	t.Helper()
	var b []byte
	switch g := got.(type) {
	case json.RawMessage:
		b = g
	default:
		var err error
		if b, err = json.Marshal(g); err != nil {
			t.Fatal(err)
		}
	}
	var x, y any
	if err := json.Unmarshal(b, &x); err != nil {
		t.Fatalf("%s: %v", b, err)
	}
	if err := json.Unmarshal([]byte(want), &y); err != nil {
		t.Fatal(err)
	}
	return reflect.DeepEqual(x, y)
}
