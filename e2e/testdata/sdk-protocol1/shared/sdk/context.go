package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Context is the plugin's handle on the host, given to Apply. It is valid for
// the life of the process: keep it to register, dispose or call the host
// later (from a handler, or a goroutine that watches Done). Every method that
// talks to the host takes the context of the work it is part of, and is one
// RPC on the plugin's single host connection.
type Context struct {
	srv *server
}

// Name is the plugin's name.
func (p *Context) Name() string { return p.srv.def.name }

// Logger logs to stderr as JSON; the host relays each line with the plugin's
// name and level. Never print to stdout: it belongs to the handshake.
func (p *Context) Logger() hclog.Logger { return p.srv.log }

// Done is closed when the host shuts the plugin down gracefully. Goroutines
// started in Apply watch it to stop.
func (p *Context) Done() <-chan struct{} { return p.srv.stopped }

// RegisterTool offers a tool through the host's pipeline.
func (p *Context) RegisterTool(ctx context.Context, t Tool) (*Handle, error) {
	params, err := checkTool(t)
	if err != nil {
		return nil, err
	}
	desc := wire.ToolDescriptor{
		Name: t.Name, Description: t.Description, Parameters: params,
		Destructive: t.Destructive, ReadOnly: t.ReadOnly, Idempotent: t.Idempotent, Timeout: t.Timeout,
	}
	return register(ctx, p.srv, &p.srv.reg.tools, "tool", named("tool", t.Name), t, func(host pb.HostClient, id string) (string, error) {
		resp, err := host.RegisterTool(ctx, &pb.RegisterToolRequest{HandlerId: id, Tool: wire.ToolDescriptorToProto(desc)})
		return resp.GetRegistrationId(), err
	})
}

func checkTool(t Tool) (json.RawMessage, error) {
	if strings.TrimSpace(t.Name) == "" {
		return nil, errors.New("register tool: Name is empty")
	}
	var errs []error
	if strings.TrimSpace(t.Description) == "" {
		errs = append(errs, errors.New("Description is empty"))
	}
	if t.Execute == nil {
		errs = append(errs, errors.New("Execute is nil"))
	}
	if t.Timeout < 0 {
		errs = append(errs, errors.New("Timeout is negative"))
	}
	params, err := schemaText("Parameters", t.Parameters, `{"type":"object"}`)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("register tool %q: %w", t.Name, joinErrors(errs))
	}
	return params, nil
}

// AddGuard adds a stage-2 rule.
func (p *Context) AddGuard(ctx context.Context, g Guard) (*Handle, error) {
	if g.Check == nil {
		return nil, fmt.Errorf("add %s: Check is nil", named("guard", g.Name))
	}
	return register(ctx, p.srv, &p.srv.reg.guards, "guard", named("guard", g.Name), g, func(host pb.HostClient, id string) (string, error) {
		resp, err := host.AddGuard(ctx, &pb.AddGuardRequest{HandlerId: id, Name: g.Name, Tools: g.Tools})
		return resp.GetRegistrationId(), err
	})
}

// OnPreExecute joins stage 1 (tools/pre-execute).
func (p *Context) OnPreExecute(ctx context.Context, l PreExecuteListener) (*Handle, error) {
	mode, err := listenMode("pre-execute listener", l.Name, l.Filter != nil, l.Wrap != nil)
	if err != nil {
		return nil, err
	}
	return register(ctx, p.srv, &p.srv.reg.pre, "pre", named("pre-execute listener", l.Name), l,
		p.listen(ctx, pb.Stage_STAGE_PRE_EXECUTE, mode, l.Name, l.Tools))
}

// OnExecute joins stage 3 (tools/execute), around the tool call.
func (p *Context) OnExecute(ctx context.Context, l ExecuteListener) (*Handle, error) {
	mode, err := listenMode("execute listener", l.Name, l.Filter != nil, l.Wrap != nil)
	if err != nil {
		return nil, err
	}
	return register(ctx, p.srv, &p.srv.reg.execute, "exec", named("execute listener", l.Name), l,
		p.listen(ctx, pb.Stage_STAGE_EXECUTE, mode, l.Name, l.Tools))
}

// OnPostExecute joins stage 4 (tools/post-execute).
func (p *Context) OnPostExecute(ctx context.Context, l PostExecuteListener) (*Handle, error) {
	mode, err := listenMode("post-execute listener", l.Name, l.Filter != nil, l.Wrap != nil)
	if err != nil {
		return nil, err
	}
	return register(ctx, p.srv, &p.srv.reg.post, "post", named("post-execute listener", l.Name), l,
		p.listen(ctx, pb.Stage_STAGE_POST_EXECUTE, mode, l.Name, l.Tools))
}

// OnResult joins stage 5 (tools/result).
func (p *Context) OnResult(ctx context.Context, l ResultListener) (*Handle, error) {
	if l.Observe == nil {
		return nil, fmt.Errorf("add %s: Observe is nil", named("result listener", l.Name))
	}
	return register(ctx, p.srv, &p.srv.reg.results, "result", named("result listener", l.Name), l,
		p.listen(ctx, pb.Stage_STAGE_RESULT, pb.ListenMode_LISTEN_MODE_UNSPECIFIED, l.Name, l.Tools))
}

func listenMode(kind, name string, filter, wrap bool) (pb.ListenMode, error) {
	switch {
	case filter && wrap:
		return 0, fmt.Errorf("add %s: set Filter or Wrap, not both", named(kind, name))
	case filter:
		return pb.ListenMode_LISTEN_MODE_FILTER, nil
	case wrap:
		return pb.ListenMode_LISTEN_MODE_WRAP, nil
	}
	return 0, fmt.Errorf("add %s: Filter and Wrap are both nil", named(kind, name))
}

func (p *Context) listen(ctx context.Context, stage pb.Stage, mode pb.ListenMode, name string, tools []string) func(pb.HostClient, string) (string, error) {
	return func(host pb.HostClient, id string) (string, error) {
		resp, err := host.Listen(ctx, &pb.ListenRequest{HandlerId: id, Stage: stage, Mode: mode, Name: name, Tools: tools})
		return resp.GetRegistrationId(), err
	}
}

// SetApprover makes a the host's current approver until it is disposed.
func (p *Context) SetApprover(ctx context.Context, a Approver) (*Handle, error) {
	if a.Approve == nil {
		return nil, fmt.Errorf("set %s: Approve is nil", named("approver", a.Name))
	}
	return register(ctx, p.srv, &p.srv.reg.approvers, "approver", named("approver", a.Name), a, func(host pb.HostClient, id string) (string, error) {
		resp, err := host.SetApprover(ctx, &pb.SetApproverRequest{HandlerId: id, Name: a.Name})
		return resp.GetRegistrationId(), err
	})
}

// Provide offers a named service to plugins that inject it. The name must be
// listed in Plugin.Provides.
func (p *Context) Provide(ctx context.Context, svc Service) (*Handle, error) {
	if strings.TrimSpace(svc.Name) == "" {
		return nil, errors.New("provide service: Name is empty")
	}
	if !slices.Contains(p.srv.def.provides, svc.Name) {
		return nil, fmt.Errorf("provide service %q: not declared in Plugin.Provides %q", svc.Name, p.srv.def.provides)
	}
	if len(svc.Methods) == 0 {
		return nil, fmt.Errorf("provide service %q: Methods is empty", svc.Name)
	}
	methods := make([]string, 0, len(svc.Methods))
	for name, m := range svc.Methods {
		if m == nil {
			return nil, fmt.Errorf("provide service %q: method %q is nil", svc.Name, name)
		}
		methods = append(methods, name)
	}
	return register(ctx, p.srv, &p.srv.reg.services, "service", named("service", svc.Name), svc, func(host pb.HostClient, id string) (string, error) {
		resp, err := host.Provide(ctx, &pb.ProvideRequest{HandlerId: id, Service: svc.Name, Methods: methods})
		return resp.GetRegistrationId(), err
	})
}

// CallService calls method of a service this plugin injects, with args
// encoded as JSON, and returns the method's JSON result. The method's own
// failure is an error too.
func (p *Context) CallService(ctx context.Context, service, method string, args any) (json.RawMessage, error) {
	raw, err := encodeJSON(args)
	if err != nil {
		return nil, fmt.Errorf("call %s.%s: cannot encode arguments: %w", service, method, err)
	}
	host, err := p.srv.hostClient()
	if err != nil {
		return nil, err
	}
	resp, err := host.CallService(ctx, &pb.HostCallServiceRequest{Service: service, Method: method, ArgsJson: raw})
	if err != nil {
		return nil, fmt.Errorf("call %s.%s: %w", service, method, hostError(ctx, err))
	}
	if resp.GetError() != "" {
		return nil, fmt.Errorf("call %s.%s: %s", service, method, resp.GetError())
	}
	return resp.GetResultJson(), nil
}

// ExecuteTool runs a tool through the host's whole pipeline, with this
// plugin as the caller. A denied or failed call is a ToolResult with OK false,
// not an error; the error is for not reaching the host at all.
func (p *Context) ExecuteTool(ctx context.Context, name string, args any) (ToolResult, error) {
	raw, err := encodeJSON(args)
	if err != nil {
		return ToolResult{}, fmt.Errorf("execute %s: cannot encode arguments: %w", name, err)
	}
	host, err := p.srv.hostClient()
	if err != nil {
		return ToolResult{}, err
	}
	resp, err := host.ExecuteTool(ctx, &pb.HostExecuteToolRequest{Name: name, ArgumentsJson: raw})
	if err != nil {
		return ToolResult{}, fmt.Errorf("execute %s: %w", name, hostError(ctx, err))
	}
	return wire.ToolResultFromProto(resp.GetResult()), nil
}

// Contribute adds a value to one of the host's extension points.
func (p *Context) Contribute(ctx context.Context, c Contribution) (*Handle, error) {
	if strings.TrimSpace(c.Point) == "" {
		return nil, errors.New("contribute: Point is empty")
	}
	raw, err := encodeJSON(c.Value)
	if err != nil {
		return nil, fmt.Errorf("contribute to %s: cannot encode Value: %w", c.Point, err)
	}
	host, err := p.srv.hostClient()
	if err != nil {
		return nil, err
	}
	resp, err := host.Contribute(ctx, &pb.ContributeRequest{Point: c.Point, Key: c.Key, Order: int64(c.Order), ValueJson: raw})
	if err != nil {
		return nil, fmt.Errorf("contribute to %s: %w", c.Point, hostError(ctx, err))
	}
	return newHandle(p.srv, resp.GetRegistrationId(), nil), nil
}

// register stores v under a fresh handler id, then asks the host to record
// the registration. The handler is stored first so a call the host routes to
// it before the reply arrives finds it; it is removed again if the host
// refuses.
func register[T any](ctx context.Context, s *server, t *table[T], kind, what string, v T,
	rpc func(host pb.HostClient, handlerID string) (string, error)) (*Handle, error) {
	host, err := s.hostClient()
	if err != nil {
		return nil, err
	}
	id := s.reg.newID(kind)
	t.put(id, v)
	regID, err := rpc(host, id)
	if err != nil {
		t.remove(id)
		return nil, fmt.Errorf("register %s: %w", what, hostError(ctx, err))
	}
	return newHandle(s, regID, func() { t.remove(id) }), nil
}

// ReportProblem tells the host what keeps the plugin from doing its job
// while it keeps running (an audit log that cannot be written), for the
// host's status and log; an empty problem says it works again. A problem
// lasts until the next report or the end of the process.
func (p *Context) ReportProblem(ctx context.Context, problem string) error {
	host, err := p.srv.hostClient()
	if err != nil {
		return err
	}
	if _, err := host.ReportProblem(ctx, &pb.ReportProblemRequest{Problem: problem}); err != nil {
		return fmt.Errorf("report problem: %w", hostError(ctx, err))
	}
	return nil
}
