package remote

import (
	"context"
	"encoding/json"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// ElicitFunc puts a plugin's question (MCP ElicitRequest params as JSON) to
// the client that made the call e and returns the client's answer (an MCP
// ElicitResult as JSON).
type ElicitFunc func(ctx context.Context, e *pipeline.Execution, params json.RawMessage) (json.RawMessage, error)

// declined is the answer to a question nobody can answer.
var declined = json.RawMessage(`{"action":"decline"}`)

// liveCalls are the calls in flight on one plugin's tools, by call id: a
// plugin may only ask a question for a call it is serving.
type liveCalls struct {
	mu    sync.Mutex
	calls map[string]liveCall
}

type liveCall struct {
	ctx context.Context
	e   *pipeline.Execution
}

// track records e as in flight until the returned func is called.
func (l *liveCalls) track(ctx context.Context, e *pipeline.Execution) func() {
	l.mu.Lock()
	if l.calls == nil {
		l.calls = map[string]liveCall{}
	}
	l.calls[e.ID()] = liveCall{ctx: ctx, e: e}
	l.mu.Unlock()
	return func() {
		l.mu.Lock()
		delete(l.calls, e.ID())
		l.mu.Unlock()
	}
}

func (l *liveCalls) get(id string) (liveCall, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	c, ok := l.calls[id]
	return c, ok
}

// maxElicitParamsBytes bounds a question: it is a message and a flat form.
const maxElicitParamsBytes = 64 << 10

// Elicit puts the plugin's question to the client of a call in flight on
// one of its tools. The question is asked under the call's context (what
// the caller's front end put in it finds the call again) and ends with the
// call or with the RPC, whichever ends first.
func (h *hostService) Elicit(ctx context.Context, req *pb.HostElicitRequest) (*pb.HostElicitResponse, error) {
	c, ok := h.inst.live.get(req.GetExecutionId())
	if !ok {
		return nil, status.Errorf(codes.FailedPrecondition, "elicit: no call %q in flight on a tool of plugin %s", req.GetExecutionId(), h.inst.name)
	}
	params := req.GetParamsJson()
	if len(params) > maxElicitParamsBytes {
		return nil, status.Errorf(codes.InvalidArgument, "elicit: params of %d bytes, over the limit of %d", len(params), maxElicitParamsBytes)
	}
	if !json.Valid(params) {
		return nil, status.Error(codes.InvalidArgument, "elicit: params are not JSON")
	}
	if h.inst.elicit == nil {
		return &pb.HostElicitResponse{ResultJson: declined}, nil
	}
	rpc := ctx
	ctx, cancel := context.WithCancel(c.ctx)
	defer cancel()
	defer context.AfterFunc(rpc, cancel)()
	out, err := h.inst.elicit(ctx, c.e, params)
	if err != nil {
		if ctx.Err() != nil {
			return nil, status.Errorf(codes.Canceled, "elicit: the call ended before the client answered")
		}
		return nil, status.Errorf(codes.Unavailable, "elicit: %v", err)
	}
	return &pb.HostElicitResponse{ResultJson: out}, nil
}
