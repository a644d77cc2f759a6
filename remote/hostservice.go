package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// Callable is a service whose methods take and return JSON, which is what a
// plugin process can call. Remote providers implement it; an in-host
// provider that implements it can be called by plugin processes too.
type Callable interface {
	Call(ctx context.Context, caller, method string, args json.RawMessage) (json.RawMessage, error)
}

// hostService is the Host service one plugin process calls back into. Every
// registration it receives is an effect of that plugin's scope.
type hostService struct {
	pb.UnimplementedHostServer
	inst  *instance
	scope *kernel.Scope

	tokens  tokens
	mu      sync.Mutex
	effects map[string]*kernel.Effect
	seq     atomic.Uint64
	// registered counts the tools registered through this service (the
	// plugin's count across its processes); nil counts nothing.
	registered *atomic.Int64
}

// countRegistered adds n tools to the plugin's count of registrations.
func (h *hostService) countRegistered(n int) {
	if h.registered != nil && n > 0 {
		h.registered.Add(int64(n))
	}
}

func newHostService(inst *instance, scope *kernel.Scope) *hostService {
	return &hostService{inst: inst, scope: scope, effects: map[string]*kernel.Effect{}}
}

func (h *hostService) registrar() (*pipeline.Registrar, error) {
	reg, err := pipeline.RegistrarOf(h.scope)
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	return reg, nil
}

// record keeps an effect under a new registration id for Dispose.
func (h *hostService) record(e *kernel.Effect, err error) (string, error) {
	if err != nil {
		return "", status.Error(codes.FailedPrecondition, err.Error())
	}
	id := "r" + strconv.FormatUint(h.seq.Add(1), 10)
	h.mu.Lock()
	h.effects[id] = e
	h.mu.Unlock()
	return id, nil
}

func (h *hostService) RegisterTool(ctx context.Context, req *pb.RegisterToolRequest) (*pb.RegisterToolResponse, error) {
	reg, err := h.registrar()
	if err != nil {
		return nil, err
	}
	t := h.toolOf(req.GetTool())
	if !h.inst.spec.toolEnabled(t.Name) {
		h.inst.log.Info("tool not enabled by the deployment; not registered", "tool", t.Name)
		id, err := h.record(h.scope.Track("disabled tool "+t.Name, func() error { return nil }))
		return &pb.RegisterToolResponse{RegistrationId: id}, err
	}
	t.Execute = h.inst.toolProxy(req.GetHandlerId(), t.Name)
	id, err := h.record(reg.Register(t))
	if err == nil {
		h.countRegistered(1)
	}
	return &pb.RegisterToolResponse{RegistrationId: id}, err
}

// toolOf is the tool a plugin's descriptor asks for, named with the
// plugin's prefix when the descriptor asks for it.
func (h *hostService) toolOf(d *pb.ToolDescriptor) pipeline.Tool {
	t := fromDescriptor(d)
	t.MaxArgumentBytes = h.inst.spec.MaxArgumentBytes
	if d.GetOwnerPrefix() {
		t.Name = h.scope.Name() + "_" + t.Name
	}
	return t
}

// RegisterTools registers a batch of tools and disposes registrations in
// one step, the registry compiled once (see pipeline.Registrar.RegisterTools).
// An unknown registration id to dispose fails the request with nothing
// changed; a refused tool fails alone.
func (h *hostService) RegisterTools(ctx context.Context, req *pb.RegisterToolsRequest) (*pb.RegisterToolsResponse, error) {
	reg, err := h.registrar()
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	drop := make([]*kernel.Effect, 0, len(req.GetDisposeRegistrationIds()))
	for _, id := range req.GetDisposeRegistrationIds() {
		e, ok := h.effects[id]
		if !ok {
			h.mu.Unlock()
			return nil, status.Errorf(codes.NotFound, "register tools: no registration %q to dispose", id)
		}
		drop = append(drop, e)
	}
	h.mu.Unlock()
	items := req.GetTools()
	results := make([]*pb.RegisterToolsResult, len(items))
	var tools []pipeline.Tool
	var at []int // index in items of each tool
	for i, item := range items {
		t := h.toolOf(item.GetTool())
		if !h.inst.spec.toolEnabled(t.Name) {
			h.inst.log.Info("tool not enabled by the deployment; not registered", "tool", t.Name)
			id, err := h.record(h.scope.Track("disabled tool "+t.Name, func() error { return nil }))
			results[i] = &pb.RegisterToolsResult{RegistrationId: id, Error: errText(err)}
			continue
		}
		t.Execute = h.inst.toolProxy(item.GetHandlerId(), t.Name)
		tools = append(tools, t)
		at = append(at, i)
	}
	effects, errs, err := reg.RegisterTools(drop, tools)
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	h.mu.Lock()
	for _, id := range req.GetDisposeRegistrationIds() {
		delete(h.effects, id)
	}
	h.mu.Unlock()
	registered := 0
	for j, i := range at {
		if errs != nil && errs[j] != nil {
			results[i] = &pb.RegisterToolsResult{Error: errs[j].Error()}
			continue
		}
		id, _ := h.record(effects[j], nil)
		results[i] = &pb.RegisterToolsResult{RegistrationId: id}
		registered++
	}
	h.countRegistered(registered)
	return &pb.RegisterToolsResponse{Results: results}, nil
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (h *hostService) AddGuard(ctx context.Context, req *pb.AddGuardRequest) (*pb.AddGuardResponse, error) {
	reg, err := h.registrar()
	if err != nil {
		return nil, err
	}
	if !req.GetShadow() && len(req.GetEnforceFor()) > 0 {
		return nil, status.Errorf(codes.InvalidArgument, "add guard %q: enforce_for without shadow: a canary is of a rule in shadow", req.GetName())
	}
	if req.GetShadow() && req.GetName() == "" {
		return nil, status.Error(codes.InvalidArgument, "add guard: a guard in shadow needs a name (its rule)")
	}
	slot := h.inst.addGuard(req.GetName(), req.GetHandlerId())
	start := h.inst.guardProxy(req.GetHandlerId(), req.GetName(), slot)
	if req.GetShadow() {
		// Put in shadow by the plugin (a rule marked mode = "shadow"):
		// the host enforces it as a deployment's shadow block.
		id, err := h.record(reg.StartedGuardInShadow(start, req.GetName(), req.GetEnforceFor(), req.GetTools()...))
		return &pb.AddGuardResponse{RegistrationId: id}, err
	}
	id, err := h.record(reg.StartedGuardVisible(start, req.GetTools()...))
	return &pb.AddGuardResponse{RegistrationId: id}, err
}

func (h *hostService) Listen(ctx context.Context, req *pb.ListenRequest) (*pb.ListenResponse, error) {
	reg, err := h.registrar()
	if err != nil {
		return nil, err
	}
	wrap := req.GetMode() == pb.ListenMode_LISTEN_MODE_WRAP
	handler, tools := req.GetHandlerId(), req.GetTools()
	var e *kernel.Effect
	switch req.GetStage() {
	case pb.Stage_STAGE_PRE_EXECUTE:
		var slot int
		if wrap {
			slot = h.inst.addPreWrapper(req.GetName(), handler)
		} else {
			slot = h.inst.addPreFilter(req.GetName(), handler)
		}
		// The proxy answers the visibility question only for a plugin
		// that declares it does (ErrNotAsked otherwise: may allow).
		e, err = reg.OnPreExecuteVisible(h.inst.preProxy(h, handler, wrap, slot), tools...)
	case pb.Stage_STAGE_EXECUTE:
		e, err = reg.OnExecute(h.inst.execProxy(h, handler, wrap), tools...)
	case pb.Stage_STAGE_POST_EXECUTE:
		e, err = reg.OnPostExecute(h.inst.postProxy(h, handler, wrap), tools...)
	case pb.Stage_STAGE_RESULT:
		if h.inst.durable != nil {
			e, err = h.inst.durable.attach(h.scope, h.inst, handler, tools)
		} else {
			e, err = reg.OnResult(h.inst.observerProxy(handler), tools...)
		}
	default:
		return nil, status.Errorf(codes.InvalidArgument, "listen: unknown stage %v", req.GetStage())
	}
	id, err := h.record(e, err)
	return &pb.ListenResponse{RegistrationId: id}, err
}

func (h *hostService) SetApprover(ctx context.Context, req *pb.SetApproverRequest) (*pb.SetApproverResponse, error) {
	reg, err := h.registrar()
	if err != nil {
		return nil, err
	}
	id, err := h.record(reg.SetApprover(h.inst.approverProxy(req.GetHandlerId())))
	return &pb.SetApproverResponse{RegistrationId: id}, err
}

func (h *hostService) Provide(ctx context.Context, req *pb.ProvideRequest) (*pb.ProvideResponse, error) {
	svc := &remoteService{inst: h.inst, handler: req.GetHandlerId(), methods: req.GetMethods()}
	id, err := h.record(h.scope.Provide(req.GetService(), svc))
	return &pb.ProvideResponse{RegistrationId: id}, err
}

func (h *hostService) CallService(ctx context.Context, req *pb.HostCallServiceRequest) (*pb.HostCallServiceResponse, error) {
	v, err := h.scope.Service(req.GetService())
	if err != nil {
		return nil, status.Error(codes.FailedPrecondition, err.Error())
	}
	c, ok := v.(Callable)
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "service %q cannot be called from a plugin process", req.GetService())
	}
	out, err := c.Call(ctx, h.scope.Name(), req.GetMethod(), req.GetArgsJson())
	if err != nil {
		return &pb.HostCallServiceResponse{Error: err.Error()}, nil
	}
	return &pb.HostCallServiceResponse{ResultJson: out}, nil
}

func (h *hostService) ExecuteTool(ctx context.Context, req *pb.HostExecuteToolRequest) (*pb.HostExecuteToolResponse, error) {
	reg, err := h.registrar()
	if err != nil {
		return nil, err
	}
	r := reg.Execute(ctx, req.GetName(), req.GetArgumentsJson())
	return &pb.HostExecuteToolResponse{Result: ToResult(r)}, nil
}

func (h *hostService) Contribute(ctx context.Context, req *pb.ContributeRequest) (*pb.ContributeResponse, error) {
	id, err := h.record(h.scope.Contribute(req.GetPoint(), req.GetKey(), int(req.GetOrder()), json.RawMessage(req.GetValueJson())))
	return &pb.ContributeResponse{RegistrationId: id}, err
}

func (h *hostService) Dispose(ctx context.Context, req *pb.DisposeRequest) (*pb.DisposeResponse, error) {
	h.mu.Lock()
	e, ok := h.effects[req.GetRegistrationId()]
	delete(h.effects, req.GetRegistrationId())
	h.mu.Unlock()
	if !ok {
		return nil, status.Errorf(codes.NotFound, "dispose: no registration %q", req.GetRegistrationId())
	}
	if err := e.Undo(); err != nil {
		return nil, status.Error(codes.Internal, fmt.Sprintf("dispose %s: %v", req.GetRegistrationId(), err))
	}
	return &pb.DisposeResponse{}, nil
}

func (h *hostService) Next(ctx context.Context, req *pb.NextRequest) (*pb.NextResponse, error) {
	next, ok := h.tokens.get(req.GetCallToken())
	if !ok {
		return nil, status.Errorf(codes.NotFound, "next: call token %q is not live (its listener call has returned)", req.GetCallToken())
	}
	resp := next(ctx)
	if resp == nil {
		return nil, status.Errorf(codes.DeadlineExceeded, "next: the listener's time ran out before it called next")
	}
	return resp, nil
}

// maxProblemBytes bounds a reported problem: it is shown, not stored.
const maxProblemBytes = 1024

func (h *hostService) ReportProblem(ctx context.Context, req *pb.ReportProblemRequest) (*pb.ReportProblemResponse, error) {
	problem := req.GetProblem()
	if len(problem) > maxProblemBytes {
		problem = problem[:maxProblemBytes] + "…"
	}
	h.inst.setProblem(problem)
	return &pb.ReportProblemResponse{}, nil
}

// spanBatchesPerSecond bounds the span batches one plugin process may hand
// to the host (the SDKs send one at most every 200 ms, up to 512 spans
// each), with a burst of twice as many.
const spanBatchesPerSecond = 20

// ExportSpans sends the plugin's spans on to the host's collector, named
// for the plugin whatever they say, at most spanBatchesPerSecond batches a
// second.
func (h *hostService) ExportSpans(ctx context.Context, req *pb.ExportSpansRequest) (*pb.ExportSpansResponse, error) {
	export := h.inst.exportSpans
	if export == nil {
		return nil, status.Error(codes.FailedPrecondition, "the host does not trace calls")
	}
	if !h.inst.spanBatches.Allow() {
		// A plugin must not be able to flood the host's collector.
		if h.inst.spansDropped.Add(1) == 1 {
			h.inst.log.Warn("plugin hands back span batches faster than the host takes them; dropping the excess", "limit_per_second", spanBatchesPerSecond)
		}
		return nil, status.Errorf(codes.ResourceExhausted, "span batches over %d a second: batch dropped", spanBatchesPerSecond)
	}
	if err := export(ctx, h.inst.name, req.GetOtlp()); err != nil {
		return nil, status.Error(codes.Unavailable, err.Error())
	}
	return &pb.ExportSpansResponse{}, nil
}

// remoteService is a service provided by a plugin process.
type remoteService struct {
	inst    *instance
	handler string
	methods []string
}

func (s *remoteService) Call(ctx context.Context, caller, method string, args json.RawMessage) (json.RawMessage, error) {
	resp, err := s.inst.calls.CallService(ctx, &pb.CallServiceRequest{HandlerId: s.handler, Method: method, ArgsJson: args, Caller: caller})
	if err != nil {
		return nil, s.inst.callErr("service call "+method, err)
	}
	if resp.GetError() != "" {
		return nil, fmt.Errorf("%s", resp.GetError())
	}
	return resp.GetResultJson(), nil
}
