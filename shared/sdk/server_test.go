package sdk

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

type greeterConfig struct {
	Greeting string `json:"greeting" doc:"what to say"`
	Times    int    `json:"times,omitempty"`
}

func TestDescribe(t *testing.T) {
	def, err := Plugin[greeterConfig]{
		Name: "greeter", Version: "1.2.3", Inject: []string{"tools", "index"}, Provides: []string{"greetings"},
		Apply: func(context.Context, *Context, greeterConfig) error { return nil },
	}.build()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, def, harnessOptions{})
	resp, err := h.plugin.Describe(testCtx(t), &pb.DescribeRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if resp.GetName() != "greeter" || resp.GetVersion() != "1.2.3" || resp.GetSdkVersion() != Version ||
		resp.GetProtocolVersion() != wire.ProtocolVersion || strings.Join(resp.GetInject(), ",") != "tools,index" ||
		strings.Join(resp.GetProvides(), ",") != "greetings" || resp.GetDryRun() {
		t.Errorf("Describe = %v", resp)
	}
	t.Run("dry-run support is declared", func(t *testing.T) {
		def, err := Plugin[greeterConfig]{Name: "g", DryRun: true, Apply: func(context.Context, *Context, greeterConfig) error { return nil }}.build()
		if err != nil {
			t.Fatal(err)
		}
		resp, err := newHarness(t, def, harnessOptions{}).plugin.Describe(testCtx(t), &pb.DescribeRequest{})
		if err != nil || !resp.GetDryRun() {
			t.Errorf("Describe = %v, %v; want dry_run", resp, err)
		}
	})
	var schema map[string]any
	if err := json.Unmarshal(resp.GetConfigSchemaJson(), &schema); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	if req, _ := schema["required"].([]any); len(req) != 1 || req[0] != "greeting" {
		t.Errorf("schema required = %v, want [greeting]", schema["required"])
	}
}

func TestApply(t *testing.T) {
	t.Run("decodes the config, dials the host once and records registrations", func(t *testing.T) {
		var got greeterConfig
		h := applyWith(t, harnessOptions{}, `{"greeting":"hi","times":2}`, func(ctx context.Context, p *Context, cfg greeterConfig) error {
			got = cfg
			_, err := p.RegisterTool(ctx, Tool{Name: "hello", Description: "says hello", ReadOnly: true, Timeout: 1500 * time.Microsecond,
				Execute: func(context.Context, *Call) (any, error) { return cfg.Greeting, nil }})
			return err
		})
		if got != (greeterConfig{Greeting: "hi", Times: 2}) {
			t.Errorf("config = %+v", got)
		}
		if id := <-h.dialedID; id != testBrokerID {
			t.Errorf("dialled broker id %d, want %d", id, testBrokerID)
		}
		reg := h.rec.last(t, "RegisterTool").req.(*pb.RegisterToolRequest)
		d := reg.GetTool()
		if d.GetName() != "hello" || d.GetDescription() != "says hello" || !d.GetReadOnly() || d.GetTimeoutMs() != 2 ||
			string(d.GetParametersJson()) != `{"type":"object"}` || reg.GetHandlerId() == "" {
			t.Errorf("RegisterTool request = %v", reg)
		}
	})

	t.Run("a knock that comes before the host's listener is tried again", func(t *testing.T) {
		h := applyWith(t, harnessOptions{dialFailures: 3}, `{"greeting":"hi"}`, func(ctx context.Context, p *Context, cfg greeterConfig) error {
			_, err := p.RegisterTool(ctx, Tool{Name: "hello", Description: "says hello",
				Execute: func(context.Context, *Call) (any, error) { return cfg.Greeting, nil }})
			return err
		})
		if n := len(h.dialedID); n != 4 {
			t.Errorf("dialled %d times, want 3 failures and 1 success", n)
		}
		h.rec.last(t, "RegisterTool")
	})

	cases := []struct {
		name   string
		config string
		apply  func(context.Context, *Context, greeterConfig) error
		want   string
	}{
		{name: "unknown field is named", config: `{"greeting":"hi","colour":"red"}`, want: `config: unknown field "colour"`},
		{name: "wrong type names the field", config: `{"greeting":5}`, want: `config: field "greeting": expected string, got a JSON number`},
		{name: "trailing data", config: `{"greeting":"hi"} {}`, want: "unexpected data after the JSON object"},
		{name: "apply error", config: `{"greeting":"hi"}`, want: "no index",
			apply: func(context.Context, *Context, greeterConfig) error { return errorString("no index") }},
		{name: "apply panic", config: `{"greeting":"hi"}`, want: "panic in apply: boom",
			apply: func(context.Context, *Context, greeterConfig) error { panic("boom") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			apply := tc.apply
			if apply == nil {
				apply = func(context.Context, *Context, greeterConfig) error { return nil }
			}
			def, err := Plugin[greeterConfig]{Name: "greeter", Apply: apply}.build()
			if err != nil {
				t.Fatal(err)
			}
			h := newHarness(t, def, harnessOptions{})
			resp, err := h.plugin.Apply(testCtx(t), &pb.ApplyRequest{ConfigJson: []byte(tc.config), HostBrokerId: testBrokerID})
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(resp.GetError(), tc.want) {
				t.Errorf("Apply error = %q, want it to contain %q", resp.GetError(), tc.want)
			}
		})
	}
}

type errorString string

func (e errorString) Error() string { return string(e) }

func TestReapply(t *testing.T) {
	var handles []*Handle
	def, err := Plugin[struct{}]{Name: "again", Apply: func(ctx context.Context, p *Context, _ struct{}) error {
		h, err := p.RegisterTool(ctx, Tool{Name: "t", Description: "d", Execute: func(context.Context, *Call) (any, error) { return 1, nil }})
		handles = append(handles, h)
		return err
	}}.build()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, def, harnessOptions{})
	ctx := testCtx(t)
	for range 2 {
		resp, err := h.plugin.Apply(ctx, &pb.ApplyRequest{HostBrokerId: testBrokerID})
		if err != nil || resp.GetError() != "" {
			t.Fatalf("Apply: %v %s", err, resp.GetError())
		}
	}
	if n := len(h.dialedID); n != 1 {
		t.Errorf("host dialled %d times for the same broker id, want once", n)
	}
	regs := h.rec.registrations()
	first, second := regs[0].req.(*pb.RegisterToolRequest), regs[1].req.(*pb.RegisterToolRequest)
	if _, err := h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: first.GetHandlerId(), Execution: execution("t", "{}")}); status.Code(err) != codes.NotFound {
		t.Errorf("handler of the first Apply: err = %v, want NotFound", err)
	}
	if _, err := h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: second.GetHandlerId(), Execution: execution("t", "{}")}); err != nil {
		t.Errorf("handler of the second Apply: %v", err)
	}
	if err := handles[0].Dispose(ctx); err != nil {
		t.Fatal(err)
	}
	if d := h.rec.disposals(); len(d) != 0 {
		t.Errorf("disposing a handle of an earlier Apply reached the host: %v", d)
	}
}

func TestShutdown(t *testing.T) {
	started, release := make(chan struct{}), make(chan struct{})
	stopped := make(chan struct{})
	var done <-chan struct{}
	def, err := Plugin[struct{}]{Name: "s",
		Apply: func(ctx context.Context, p *Context, _ struct{}) error {
			done = p.Done()
			_, err := p.RegisterTool(ctx, Tool{Name: "slow", Description: "d", Execute: func(context.Context, *Call) (any, error) {
				close(started)
				<-release
				return "finished", nil
			}})
			return err
		},
		Stop: func(context.Context) error { close(stopped); return errorString("flush failed") },
	}.build()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, def, harnessOptions{})
	ctx := testCtx(t)
	if _, err := h.plugin.Apply(ctx, &pb.ApplyRequest{HostBrokerId: testBrokerID}); err != nil {
		t.Fatal(err)
	}
	handler := h.rec.last(t, "RegisterTool").req.(*pb.RegisterToolRequest).GetHandlerId()

	inflight := make(chan *pb.ExecuteToolResponse, 1)
	go func() {
		resp, _ := h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: handler, Execution: execution("slow", "{}")})
		inflight <- resp
	}()
	<-started
	shut := make(chan *pb.ShutdownResponse, 1)
	go func() {
		resp, _ := h.plugin.Shutdown(ctx, &pb.ShutdownRequest{})
		shut <- resp
	}()
	select {
	case <-stopped:
		t.Fatal("Stop ran while a call was still in flight")
	case <-time.After(50 * time.Millisecond):
	}
	close(release)
	if resp := <-inflight; string(resp.GetValueJson()) != `"finished"` {
		t.Errorf("call in flight = %v, want it to finish", resp)
	}
	if resp := <-shut; resp.GetError() != "stop: flush failed" {
		t.Errorf("Shutdown = %v, want the stop hook's error", resp)
	}
	select {
	case <-done:
	default:
		t.Error("Context.Done not closed after Shutdown")
	}
	if _, err := h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: handler, Execution: execution("slow", "{}")}); status.Code(err) != codes.Unavailable {
		t.Errorf("call after Shutdown: err = %v, want Unavailable", err)
	}
}
