package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/mcpserver"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/sandbox"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// The tests serve a host whose plugins are in-host kernel plugins (a
// "demo" plugin with tools, a "policy" plugin that denies and asks, an
// "audit" observer), with the SDK's own client over three transports.

// bleve (tool search) starts a process-wide analysis pool at init.
func TestMain(m *testing.M) {
	// The test binary is the sandbox launcher of the plugins a test starts.
	sandbox.RunIfLauncher()
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/blevesearch/bleve_index_api.AnalysisWorker"))
}

// leakCheck fails t if it leaves goroutines behind; the SDK's may take a
// moment to end, which goleak waits for.
func leakCheck(t *testing.T) {
	t.Helper()
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
}

// fixture is a host with the test plugins, served over MCP.
type fixture struct {
	h     *host.Host
	srv   *mcpserver.Server
	audit *audit
	demo  *demo
}

// newFixture starts a host with the test plugins and an MCP server over it.
func newFixture(t testing.TB, approvalTimeout time.Duration) *fixture {
	t.Helper()
	return newFixtureWith(t, approvalTimeout, mcpserver.Options{})
}

// newFixtureWith is newFixture with the server's options (its version and
// logger are the fixture's).
func newFixtureWith(t testing.TB, approvalTimeout time.Duration, opts mcpserver.Options) *fixture {
	t.Helper()
	d := &deployment.Deployment{Host: deployment.Host{ApprovalTimeout: approvalTimeout, LogLevel: "warn"}}
	log := hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Warn, Output: os.Stderr})
	h, err := host.New(d, log)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{h: h, audit: &audit{}, demo: newDemo()}
	for _, p := range []kernel.Plugin{f.audit.plugin(), policyPlugin(), f.demo.plugin()} {
		if _, err := h.Kernel().Load(p); err != nil {
			h.Stop(context.Background())
			t.Fatalf("load %s: %v", p.Name, err)
		}
	}
	opts.Version, opts.Logger = "test", log.Named("mcp")
	f.srv = mcpserver.New(h, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := f.srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		h.Stop(ctx)
	})
	return f
}

// demo is the plugin with the tools.
type demo struct {
	// started receives once each time the wait tool starts; cancelled once
	// each time its context ends before it returns.
	started, cancelled chan struct{}
	extra              bool // register the extra tool too
	mu                 sync.Mutex
}

func newDemo() *demo {
	return &demo{started: make(chan struct{}, 8), cancelled: make(chan struct{}, 8)}
}

const textSchema = `{"type":"object","properties":{"text":{"type":"string"}},"required":["text"],"additionalProperties":false}`

func (d *demo) tools() []pipeline.Tool {
	ts := []pipeline.Tool{
		{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "echo", Description: "Echo the text back.", Parameters: json.RawMessage(textSchema), ReadOnly: true, Idempotent: true,
			},
			Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
				var in struct{ Text string }
				if err := e.Decode(&in); err != nil {
					return nil, err
				}
				return in.Text, nil
			},
		},
		{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "add", Description: "Add two numbers.",
				Parameters: json.RawMessage(`{"properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`),
			},
			Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
				var in struct{ A, B float64 }
				if err := e.Decode(&in); err != nil {
					return nil, err
				}
				return map[string]float64{"sum": in.A + in.B}, nil
			},
		},
		{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "delete", Description: "Delete a thing.", Destructive: true, Parameters: json.RawMessage(textSchema),
			},
			Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
				var in struct{ Text string }
				if err := e.Decode(&in); err != nil {
					return nil, err
				}
				return "deleted " + in.Text, nil
			},
		},
		{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "secret", Description: "Read the secret.",
			},
			Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
				return "the secret", nil
			},
		},
		{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "wait", Description: "Wait until cancelled.",
			},
			Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
				d.started <- struct{}{}
				select {
				case <-ctx.Done():
					d.cancelled <- struct{}{}
					return nil, ctx.Err()
				case <-time.After(20 * time.Second):
					return "not cancelled", nil
				}
			},
		},
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.extra {
		ts = append(ts, pipeline.Tool{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "extra", Description: "Appears on reload.",
			},
			Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
				return "extra", nil
			},
		})
	}
	return ts
}

func (d *demo) plugin() kernel.Plugin {
	return kernel.Plugin{
		Name:   "demo",
		Inject: []string{pipeline.ServiceName},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			var errs []error
			for _, t := range d.tools() {
				_, err := reg.Register(t)
				errs = append(errs, err)
			}
			return errors.Join(errs...)
		},
	}
}

// policyPlugin denies "secret" and asks about destructive tools.
func policyPlugin() kernel.Plugin {
	return kernel.Plugin{
		Name:   "policy",
		Inject: []string{pipeline.ServiceName},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			_, err = reg.OnPreExecute(func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				switch {
				case e.Name() == "secret":
					return pipeline.Deny("secrets are off limits"), nil
				case e.Tool().Destructive:
					return pipeline.Ask(e.Name() + " is destructive"), nil
				}
				return next(ctx), nil
			})
			return err
		},
	}
}

// audit records every call's outcome (stage 5).
type audit struct {
	mu   sync.Mutex
	recs []record
}

type record struct {
	Tool, Caller string
	Code         pipeline.Code
}

func (a *audit) plugin() kernel.Plugin {
	return kernel.Plugin{
		Name:   "audit",
		Inject: []string{pipeline.ServiceName},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			_, err = reg.OnResult(func(ctx context.Context, e *pipeline.Execution, r pipeline.Result) error {
				a.mu.Lock()
				defer a.mu.Unlock()
				a.recs = append(a.recs, record{Tool: e.Name(), Caller: e.Caller(), Code: r.Code()})
				return nil
			})
			return err
		},
	}
}

// waitFor returns the first record of tool, waiting for it to be observed.
func (a *audit) waitFor(t *testing.T, tool string) record {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		a.mu.Lock()
		i := slices.IndexFunc(a.recs, func(r record) bool { return r.Tool == tool })
		var r record
		if i >= 0 {
			r = a.recs[i]
		}
		a.mu.Unlock()
		if i >= 0 {
			return r
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("no call of %s was observed", tool)
	return record{}
}

// transport is one way of connecting the SDK's client to the server.
type transport struct {
	name string
	// version is the protocol the client asks for ("" is the SDK's newest).
	version string
	connect func(t testing.TB, ctx context.Context, srv *mcpserver.Server, c *mcp.Client, version string) *mcp.ClientSession
}

var transports = []transport{
	// The SDK's client speaks 2026-07-28 on a stream: questions go out as
	// input-required results.
	{name: "stdio", connect: connectStdio},
	// A client of 2025-11-25 is sent elicitation/create during the call.
	{name: "stdio-2025-11-25", version: "2025-11-25", connect: connectStdio},
	// Streamable HTTP keeps a session for a client of 2025-11-25; one of
	// 2026-07-28 is served without one (stateless_test.go).
	{name: "http", version: "2025-11-25", connect: connectHTTP},
}

// connectStdio connects over a pair of OS pipes, as a client that launched
// the server would.
func connectStdio(t testing.TB, ctx context.Context, srv *mcpserver.Server, c *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	return connectStdioWith(t, ctx, srv, c, version, true)
}

// connectStdioWith is connectStdio, with tools/call served by the hot path
// when hot is true, by the SDK otherwise.
func connectStdioWith(t testing.TB, ctx context.Context, srv *mcpserver.Server, c *mcp.Client, version string, hot bool) *mcp.ClientSession {
	t.Helper()
	toServer, fromClient, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	toClient, fromServer, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	serve := srv.ServeStdio // as `host mcp` serves: tools/call by the hot path (hotcall.go)
	if !hot {
		serve = srv.ServeStdioSDK
	}
	go func() {
		err := serve(ctx, toServer, fromServer)
		toServer.Close()
		fromServer.Close()
		served <- err
	}()
	cs, err := c.Connect(ctx, &mcp.IOTransport{Reader: toClient, Writer: fromClient}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		fromClient.Close()
		toClient.Close()
		<-served
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() {
		_ = cs.Close()
		select {
		case err := <-served:
			if err != nil {
				t.Errorf("Run: %v", err)
			}
		case <-time.After(10 * time.Second):
			t.Error("Run did not return after the client closed")
		}
	})
	return cs
}

// connectHTTP serves streamable HTTP on a loopback port.
func connectHTTP(t testing.TB, ctx context.Context, srv *mcpserver.Server, c *mcp.Client, version string) *mcp.ClientSession {
	t.Helper()
	endpoint, ok := endpoints.Load(srv)
	if !ok {
		endpoint = serveHTTP(t, srv)
		endpoints.Store(srv, endpoint)
	}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint.(string)}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// endpoints is each server's HTTP endpoint, once served.
var endpoints sync.Map

// serveHTTP serves srv on a loopback port until the test ends and returns
// the endpoint.
func serveHTTP(t testing.TB, srv *mcpserver.Server) string {
	t.Helper()
	ln, err := mcpserver.Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := srv.Shutdown(ctx); err != nil {
			t.Errorf("shutdown: %v", err)
		}
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return "http://" + ln.Addr().(*net.TCPAddr).String() + mcpserver.Path
}

// text is a tool result's text.
func text(r *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}

// elicitor answers elicitations as a user would and records the questions.
type elicitor struct {
	mu        sync.Mutex
	questions []string
	answer    func(ctx context.Context) (*mcp.ElicitResult, error)
}

func (e *elicitor) handle(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	e.mu.Lock()
	e.questions = append(e.questions, req.Params.Message)
	answer := e.answer
	e.mu.Unlock()
	return answer(ctx)
}

func (e *elicitor) set(answer func(ctx context.Context) (*mcp.ElicitResult, error)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.answer = answer
}

func (e *elicitor) asked() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.questions)
}

func reply(action string, approve bool) func(context.Context) (*mcp.ElicitResult, error) {
	return func(context.Context) (*mcp.ElicitResult, error) {
		r := &mcp.ElicitResult{Action: action}
		if action == "accept" {
			r.Content = map[string]any{"approve": approve}
		}
		return r, nil
	}
}
