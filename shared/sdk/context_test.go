package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

func noop(context.Context, *Call) (any, error) { return nil, nil }

func TestRegistrationValidation(t *testing.T) {
	var p *Context
	h := applyWith(t, harnessOptions{}, "", func(_ context.Context, pc *Context, _ struct{}) error {
		p = pc
		return nil
	})
	ctx := testCtx(t)
	for _, tc := range []struct {
		name string
		do   func() error
		want string
	}{
		{name: "tool without name", want: "register tool: Name is empty",
			do: func() error { _, err := p.RegisterTool(ctx, Tool{Description: "d", Execute: noop}); return err }},
		{name: "tool without description", want: `register tool "t": Description is empty`,
			do: func() error { _, err := p.RegisterTool(ctx, Tool{Name: "t", Execute: noop}); return err }},
		{name: "tool without execute", want: `register tool "t": Execute is nil`,
			do: func() error { _, err := p.RegisterTool(ctx, Tool{Name: "t", Description: "d"}); return err }},
		{name: "tool with bad parameters", want: "Parameters is not valid JSON",
			do: func() error {
				_, err := p.RegisterTool(ctx, Tool{Name: "t", Description: "d", Parameters: "{", Execute: noop})
				return err
			}},
		{name: "listener with both forms", want: "set Filter or Wrap, not both",
			do: func() error {
				_, err := p.OnPreExecute(ctx, PreExecuteListener{
					Filter: func(context.Context, *Call) (Decision, error) { return Pass(), nil },
					Wrap:   func(context.Context, *Call, NextDecision) (Decision, error) { return Pass(), nil }})
				return err
			}},
		{name: "listener with neither", want: "Filter and Wrap are both nil",
			do: func() error { _, err := p.OnPostExecute(ctx, PostExecuteListener{}); return err }},
		{name: "guard without check", want: "Check is nil",
			do: func() error { _, err := p.AddGuard(ctx, Guard{}); return err }},
		{name: "service not declared in Provides", want: `provide service "other": not declared in Plugin.Provides ["index" "idx"]`,
			do: func() error {
				_, err := p.Provide(ctx, Service{Name: "other", Methods: map[string]Method{"m": func(context.Context, json.RawMessage) (any, error) { return nil, nil }}})
				return err
			}},
		{name: "service without methods", want: `provide service "idx": Methods is empty`,
			do: func() error { _, err := p.Provide(ctx, Service{Name: "idx"}); return err }},
		{name: "contribution without point", want: "Point is empty",
			do: func() error { _, err := p.Contribute(ctx, Contribution{}); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want it to contain %q", err, tc.want)
			}
		})
	}
	if regs := h.rec.registrations(); len(regs) != 0 {
		t.Errorf("invalid registrations reached the host: %v", regs)
	}
}

func TestRegisterRefusedByHost(t *testing.T) {
	var regErr error
	h := applyWith(t, harnessOptions{host: func(rec *record) *fakeHost {
		fh := recordingHost(rec)
		fh.register = func(kind string, req proto.Message) (string, error) {
			rec.mu.Lock()
			rec.regs = append(rec.regs, registration{kind: kind, req: req})
			rec.mu.Unlock()
			return "", status.Error(codes.AlreadyExists, "tool add is already registered by plugin P")
		}
		return fh
	}}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		_, regErr = p.RegisterTool(ctx, Tool{Name: "add", Description: "d", Execute: noop})
		return nil
	})
	if want := `register tool "add": tool add is already registered by plugin P`; regErr == nil || regErr.Error() != want {
		t.Errorf("err = %v, want %q", regErr, want)
	}
	handler := h.rec.last(t, "RegisterTool").req.(*pb.RegisterToolRequest).GetHandlerId()
	_, err := h.plugin.ExecuteTool(testCtx(t), &pb.ExecuteToolRequest{HandlerId: handler, Execution: execution("add", "{}")})
	if status.Code(err) != codes.NotFound {
		t.Errorf("a refused tool's handler is still served: err = %v", err)
	}
}

func TestDisposeAndRuntimeRegistration(t *testing.T) {
	// The "manage" tool registers and disposes "extra" at run time, from its
	// own handler, long after Apply returned.
	var extra *Handle
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		_, err := p.RegisterTool(ctx, Tool{Name: "manage", Description: "d", Execute: func(ctx context.Context, c *Call) (any, error) {
			var op string
			if err := c.Bind(&op); err != nil {
				return nil, err
			}
			if op == "add" {
				h, err := p.RegisterTool(ctx, Tool{Name: "extra", Description: "d",
					Execute: func(context.Context, *Call) (any, error) { return "extra!", nil }})
				extra = h
				return nil, err
			}
			return nil, extra.Dispose(ctx)
		}})
		return err
	})
	ctx := testCtx(t)
	manage := h.rec.last(t, "RegisterTool").req.(*pb.RegisterToolRequest).GetHandlerId()
	run := func(handler, args string) (*pb.ExecuteToolResponse, error) {
		return h.plugin.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: handler, Execution: execution("x", args)})
	}
	if resp, err := run(manage, `"add"`); err != nil || resp.GetError() != "" {
		t.Fatalf("add: %v %v", resp, err)
	}
	reg := h.rec.last(t, "RegisterTool")
	extraHandler := reg.req.(*pb.RegisterToolRequest).GetHandlerId()
	if resp, err := run(extraHandler, "{}"); err != nil || string(resp.GetValueJson()) != `"extra!"` {
		t.Fatalf("extra: %v %v", resp, err)
	}
	for range 2 {
		if resp, err := run(manage, `"remove"`); err != nil || resp.GetError() != "" {
			t.Fatalf("remove: %v %v", resp, err)
		}
	}
	if d := h.rec.disposals(); len(d) != 1 || d[0] != reg.id {
		t.Errorf("host saw disposals %v, want exactly [%s]", d, reg.id)
	}
	if _, err := run(extraHandler, "{}"); status.Code(err) != codes.NotFound {
		t.Errorf("disposed tool still served: %v", err)
	}
}

func TestHostCalls(t *testing.T) {
	var p *Context
	h := applyWith(t, harnessOptions{maxBytes: 64 << 10, host: func(rec *record) *fakeHost {
		fh := recordingHost(rec)
		fh.executeTool = func(_ context.Context, req *pb.HostExecuteToolRequest) (*pb.HostExecuteToolResponse, error) {
			return &pb.HostExecuteToolResponse{Result: &pb.ToolResult{Id: "c9", Error: &pb.ToolError{Code: string(wire.CodeDenied), Message: "no " + req.GetName()},
				DecidedBy: "safety", ValueJson: req.GetArgumentsJson()}}, nil
		}
		fh.callService = func(_ context.Context, req *pb.HostCallServiceRequest) (*pb.HostCallServiceResponse, error) {
			if req.GetMethod() == "fail" {
				return &pb.HostCallServiceResponse{Error: "no such key"}, nil
			}
			return &pb.HostCallServiceResponse{ResultJson: append([]byte(req.GetService()+"."+req.GetMethod()+":"), req.GetArgsJson()...)}, nil
		}
		return fh
	}}, "", func(_ context.Context, pc *Context, _ struct{}) error {
		p = pc
		return nil
	})
	ctx := testCtx(t)
	t.Run("execute a tool through the host", func(t *testing.T) {
		res, err := p.ExecuteTool(ctx, "delete", map[string]string{"path": "/"})
		if err != nil {
			t.Fatal(err)
		}
		want := ToolResult{ID: "c9", Value: json.RawMessage(`{"path":"/"}`), Error: &ToolError{Code: wire.CodeDenied, Message: "no delete"}, DecidedBy: "safety"}
		if res.ID != want.ID || res.OK || string(res.Value) != string(want.Value) || *res.Error != *want.Error || res.DecidedBy != want.DecidedBy {
			t.Errorf("result = %+v, want %+v", res, want)
		}
	})
	t.Run("call an injected service", func(t *testing.T) {
		got, err := p.CallService(ctx, "index", "get", []int{1})
		if err != nil || string(got) != "index.get:[1]" {
			t.Errorf("got %s, %v", got, err)
		}
		if _, err := p.CallService(ctx, "index", "fail", nil); err == nil || err.Error() != "call index.fail: no such key" {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("contribute", func(t *testing.T) {
		hd, err := p.Contribute(ctx, Contribution{Point: "menu", Key: "k", Order: 3, Value: []string{"a"}})
		if err != nil {
			t.Fatal(err)
		}
		req := h.rec.last(t, "Contribute").req.(*pb.ContributeRequest)
		if req.GetPoint() != "menu" || req.GetKey() != "k" || req.GetOrder() != 3 || string(req.GetValueJson()) != `["a"]` || hd.ID() == "" {
			t.Errorf("Contribute request = %v", req)
		}
		if err := hd.Dispose(ctx); err != nil {
			t.Fatal(err)
		}
		if d := h.rec.disposals(); len(d) != 1 || d[0] != hd.ID() {
			t.Errorf("disposals = %v", d)
		}
	})
	t.Run("an oversized request is refused before sending", func(t *testing.T) {
		_, err := p.ExecuteTool(ctx, "t", strings.Repeat("x", 128<<10))
		var tooLarge *wire.TooLargeError
		if !errors.As(err, &tooLarge) || !strings.Contains(err.Error(), "request ExecuteTool is") {
			t.Errorf("err = %v, want a TooLargeError", err)
		}
	})
}

func TestHostCallsBeforeApply(t *testing.T) {
	def, err := Plugin[struct{}]{Name: "x", Apply: func(context.Context, *Context, struct{}) error { return nil }}.build()
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, def, harnessOptions{})
	if _, err := h.srv.api.ExecuteTool(testCtx(t), "t", nil); err == nil || !strings.Contains(err.Error(), "not connected to the host") {
		t.Errorf("err = %v", err)
	}
}
