package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// The stage handlers. Each looks up the handler the host addresses by
// handler_id, runs the author's function under the RPC's context (so the
// host's cancellation and deadline reach it) inside contain, and reports the
// author's failure in the response's error field. gRPC errors are kept for
// what is not the author's doing: an unknown handler id, shutting down.

func newCall(m *pb.Execution) *Call { return &Call{Execution: wire.ExecutionFromProto(m)} }

func named(kind, name string) string {
	if name == "" {
		return kind
	}
	return fmt.Sprintf("%s %q", kind, name)
}

// ExecuteTool runs a registered tool.
func (s *server) ExecuteTool(ctx context.Context, req *pb.ExecuteToolRequest) (*pb.ExecuteToolResponse, error) {
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	tool, ok := s.reg.tools.get(req.GetHandlerId())
	if !ok {
		return nil, unknownHandler("tool", req.GetHandlerId())
	}
	what := named("tool", tool.Name)
	var value json.RawMessage
	err = contain(s.log, what, func() error {
		v, err := tool.Execute(ctx, newCall(req.GetExecution()))
		if err != nil {
			return err // verbatim: the host reports TOOL_ERROR with this message
		}
		if value, err = encodeJSON(v); err != nil {
			return fmt.Errorf("%s: cannot encode the result: %w", what, err)
		}
		return nil
	})
	if err != nil {
		return &pb.ExecuteToolResponse{Error: err.Error()}, nil
	}
	resp := &pb.ExecuteToolResponse{ValueJson: value}
	if err := wire.CheckSize("result of "+what, resp, s.maxBytes); err != nil {
		return &pb.ExecuteToolResponse{Error: err.Error()}, nil
	}
	return resp, nil
}

// Guard runs a stage-2 guard.
func (s *server) Guard(ctx context.Context, req *pb.GuardRequest) (*pb.GuardResponse, error) {
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	g, ok := s.reg.guards.get(req.GetHandlerId())
	if !ok {
		return nil, unknownHandler("guard", req.GetHandlerId())
	}
	var reason string
	err = contain(s.log, named("guard", g.Name), func() (err error) {
		reason, err = g.Check(ctx, newCall(req.GetExecution()))
		return err
	})
	if err != nil {
		return &pb.GuardResponse{Error: err.Error()}, nil
	}
	return &pb.GuardResponse{Reason: reason}, nil
}

// PreExecute runs a stage-1 listener, filter or wrapper.
func (s *server) PreExecute(ctx context.Context, req *pb.PreExecuteRequest) (*pb.PreExecuteResponse, error) {
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	l, ok := s.reg.pre.get(req.GetHandlerId())
	if !ok {
		return nil, unknownHandler("pre-execute listener", req.GetHandlerId())
	}
	call := newCall(req.GetExecution())
	var d Decision
	err = contain(s.log, named("pre-execute listener", l.Name), func() (err error) {
		if l.Wrap == nil {
			d, err = l.Filter(ctx, call)
			return err
		}
		next := s.nextDecision(req.GetCallToken())
		d, err = wrapResolvingPass(ctx, next, func(next func(context.Context) (Decision, error)) (Decision, error) {
			return l.Wrap(ctx, call, next)
		}, func(d Decision) bool { return d.Verdict == wire.VerdictPass })
		return err
	})
	if err == nil {
		err = checkDecision(d)
	}
	if err != nil {
		return &pb.PreExecuteResponse{Error: err.Error()}, nil
	}
	return &pb.PreExecuteResponse{Decision: wire.DecisionToProto(d)}, nil
}

// WrapExecute runs a stage-3 listener, filter or wrapper.
func (s *server) WrapExecute(ctx context.Context, req *pb.WrapExecuteRequest) (*pb.WrapExecuteResponse, error) {
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	l, ok := s.reg.execute.get(req.GetHandlerId())
	if !ok {
		return nil, unknownHandler("execute listener", req.GetHandlerId())
	}
	call := newCall(req.GetExecution())
	what := named("execute listener", l.Name)
	var out *Outcome
	err = contain(s.log, what, func() error {
		if l.Wrap == nil {
			o, err := l.Filter(ctx, call)
			out = o
			return err
		}
		o, err := l.Wrap(ctx, call, s.nextOutcome(req.GetCallToken()))
		out = &o
		return err
	})
	if err == nil && out != nil {
		err = checkOutcome(*out)
	}
	if err != nil {
		return &pb.WrapExecuteResponse{Error: err.Error()}, nil
	}
	if out == nil {
		return &pb.WrapExecuteResponse{Pass: true}, nil
	}
	resp := &pb.WrapExecuteResponse{Outcome: wire.OutcomeToProto(*out)}
	if err := wire.CheckSize("result of "+what, resp, s.maxBytes); err != nil {
		return &pb.WrapExecuteResponse{Error: err.Error()}, nil
	}
	return resp, nil
}

// PostExecute runs a stage-4 listener, filter or wrapper.
func (s *server) PostExecute(ctx context.Context, req *pb.PostExecuteRequest) (*pb.PostExecuteResponse, error) {
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	l, ok := s.reg.post.get(req.GetHandlerId())
	if !ok {
		return nil, unknownHandler("post-execute listener", req.GetHandlerId())
	}
	call := newCall(req.GetExecution())
	out := wire.OutcomeFromProto(req.GetOutcome())
	what := named("post-execute listener", l.Name)
	var r Review
	err = contain(s.log, what, func() (err error) {
		if l.Wrap == nil {
			r, err = l.Filter(ctx, call, out)
			return err
		}
		next := s.nextReview(req.GetCallToken())
		r, err = wrapResolvingPass(ctx, next, func(next func(context.Context) (Review, error)) (Review, error) {
			return l.Wrap(ctx, call, out, next)
		}, func(r Review) bool { return r.Verdict == wire.ReviewPass })
		return err
	})
	if err == nil {
		err = checkReview(r)
	}
	if err != nil {
		return &pb.PostExecuteResponse{Error: err.Error()}, nil
	}
	resp := &pb.PostExecuteResponse{Review: wire.ReviewToProto(r)}
	if err := wire.CheckSize("replacement value of "+what, resp, s.maxBytes); err != nil {
		return &pb.PostExecuteResponse{Error: err.Error()}, nil
	}
	return resp, nil
}

// Approve runs the approver.
func (s *server) Approve(ctx context.Context, req *pb.ApproveRequest) (*pb.ApproveResponse, error) {
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	a, ok := s.reg.approvers.get(req.GetHandlerId())
	if !ok {
		return nil, unknownHandler("approver", req.GetHandlerId())
	}
	var ans Approval
	err = contain(s.log, named("approver", a.Name), func() (err error) {
		ans, err = a.Approve(ctx, newCall(req.GetExecution()), req.GetQuestion())
		return err
	})
	if err != nil {
		return &pb.ApproveResponse{Error: err.Error()}, nil
	}
	return wire.ApprovalToProto(ans), nil
}

// CallService runs a method of a service this plugin provides.
func (s *server) CallService(ctx context.Context, req *pb.CallServiceRequest) (*pb.CallServiceResponse, error) {
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	svc, ok := s.reg.services.get(req.GetHandlerId())
	if !ok {
		return nil, unknownHandler("service", req.GetHandlerId())
	}
	what := fmt.Sprintf("method %s.%s", svc.Name, req.GetMethod())
	m, ok := svc.Methods[req.GetMethod()]
	if !ok {
		return &pb.CallServiceResponse{Error: fmt.Sprintf("service %q has no method %q", svc.Name, req.GetMethod())}, nil
	}
	var result json.RawMessage
	err = contain(s.log, what, func() error {
		v, err := m(withServiceCaller(ctx, req.GetCaller()), req.GetArgsJson())
		if err != nil {
			return err
		}
		if result, err = encodeJSON(v); err != nil {
			return fmt.Errorf("%s: cannot encode the result: %w", what, err)
		}
		return nil
	})
	if err != nil {
		return &pb.CallServiceResponse{Error: err.Error()}, nil
	}
	resp := &pb.CallServiceResponse{ResultJson: result}
	if err := wire.CheckSize("result of "+what, resp, s.maxBytes); err != nil {
		return &pb.CallServiceResponse{Error: err.Error()}, nil
	}
	return resp, nil
}

// Observe delivers stage-5 results to result listeners, one at a time in the
// order they arrive. A listener's panic is logged and the stream goes on;
// the stream's context is what the listeners run under.
func (s *server) Observe(stream pb.Plugin_ObserveServer) error {
	ctx := stream.Context()
	var received uint64
	for {
		req, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return stream.SendAndClose(&pb.ObserveResponse{Received: received})
		}
		if err != nil {
			return err
		}
		received++
		l, ok := s.reg.results.get(req.GetHandlerId())
		if !ok {
			// Disposed while the result was queued: nothing to deliver to.
			s.log.Debug("result for an unknown listener dropped", "handler_id", req.GetHandlerId())
			continue
		}
		call, res := newCall(req.GetExecution()), wire.ToolResultFromProto(req.GetResult())
		what := named("result listener", l.Name)
		if err := contain(s.log, what, func() error { l.Observe(ctx, call, res); return nil }); err != nil {
			s.log.Error("result listener failed", "listener", what, "error", err)
		}
	}
}
