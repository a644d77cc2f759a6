package sdktest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// This file runs the plugin's handlers the way the host's pipeline does:
// each stage's listeners in registration order, a FILTER's pass going on to
// the next, a WRAP listener's Host.Next running the rest of the chain
// behind it. An error from a stage method is a listener that failed (an
// error answer, a gRPC failure, the zero verdict): the host then denies
// (stages 1 and 2), reports TOOL_ERROR (stage 3) or blocks (stage 4).

// chains holds the rest of each WRAP call the plugin is handling, by call
// token, for Host.Next.
type chains struct {
	p     *Plugin
	mu    sync.Mutex
	n     int
	rests map[string]func(context.Context) (*pb.NextResponse, error)
}

func newChains() *chains {
	return &chains{rests: map[string]func(context.Context) (*pb.NextResponse, error){}}
}

// open gives rest a token, valid until the returned func is called.
func (c *chains) open(rest func(context.Context) (*pb.NextResponse, error)) (string, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n++
	tok := "sdktest-token-" + strconv.Itoa(c.n)
	c.rests[tok] = rest
	return tok, func() {
		c.mu.Lock()
		delete(c.rests, tok)
		c.mu.Unlock()
	}
}

func (c *chains) next(ctx context.Context, tok string) (*pb.NextResponse, error) {
	c.mu.Lock()
	rest := c.rests[tok]
	c.mu.Unlock()
	if rest == nil {
		return nil, status.Errorf(codes.NotFound, "fake host: call token %q is not valid (its request was answered)", tok)
	}
	return rest(ctx)
}

// PreExecute runs the plugin's stage-1 listeners for e. All of them
// passing answers VerdictPass (the host then goes on to its own rules).
func (p *Plugin) PreExecute(ctx context.Context, e wire.Execution) (wire.Decision, error) {
	return p.preFrom(ctx, wire.ExecutionToProto(e), p.listeners(pb.Stage_STAGE_PRE_EXECUTE, e.Name))
}

func (p *Plugin) preFrom(ctx context.Context, e *pb.Execution, ls []*pb.ListenRequest) (wire.Decision, error) {
	for i, l := range ls {
		req := &pb.PreExecuteRequest{HandlerId: l.GetHandlerId(), Execution: e}
		if l.GetMode() == pb.ListenMode_LISTEN_MODE_WRAP {
			tok, done := p.host.chain.open(func(ctx context.Context) (*pb.NextResponse, error) {
				d, err := p.preFrom(ctx, e, ls[i+1:])
				if err != nil {
					return nil, err
				}
				return &pb.NextResponse{Answer: &pb.NextResponse_PreExecute{PreExecute: wire.DecisionToProto(d)}}, nil
			})
			req.CallToken = tok
			resp, err := p.client.PreExecute(ctx, req)
			done()
			return decided(l, resp, err, true)
		}
		resp, err := p.client.PreExecute(ctx, req)
		d, err := decided(l, resp, err, false)
		if err != nil || d.Verdict != wire.VerdictPass {
			return d, err
		}
	}
	return wire.Decision{Verdict: wire.VerdictPass}, nil
}

func decided(l *pb.ListenRequest, resp *pb.PreExecuteResponse, err error, wrap bool) (wire.Decision, error) {
	if err == nil && resp.GetError() != "" {
		err = errors.New(resp.GetError())
	}
	if err != nil {
		return wire.Decision{}, fmt.Errorf("stage-1 listener %s failed: %w", listenerName(l), err)
	}
	d := wire.DecisionFromProto(resp.GetDecision())
	switch {
	case d.Verdict == wire.VerdictUnspecified || d.Verdict > wire.VerdictAsk:
		return d, fmt.Errorf("stage-1 listener %s answered verdict %v, not a decision", listenerName(l), d.Verdict)
	case wrap && d.Verdict == wire.VerdictPass:
		return d, fmt.Errorf("stage-1 WRAP listener %s answered pass: a wrapper answers a decision", listenerName(l))
	}
	return d, nil
}

func listenerName(l interface{ GetHandlerId() string }) string {
	if n, ok := l.(interface{ GetName() string }); ok && n.GetName() != "" {
		return fmt.Sprintf("%q", n.GetName())
	}
	return "handler " + l.GetHandlerId()
}

// Guard runs the plugin's guards for e: the first reason denies ("" is
// every guard passing). A guard registered in shadow is asked and not
// applied, unless its canary selects e's principal, as the host runs it.
func (p *Plugin) Guard(ctx context.Context, e wire.Execution) (string, error) {
	for _, r := range p.Registrations() {
		g, ok := r.Request.(*pb.AddGuardRequest)
		if !ok || !wants(g.GetTools(), e.Name) {
			continue
		}
		if g.GetShadow() && !slices.ContainsFunc(g.GetEnforceFor(), e.Principal.Matches) {
			// In shadow, as the host runs it: asked, not applied.
			_, _ = p.client.Guard(ctx, &pb.GuardRequest{HandlerId: g.GetHandlerId(), Execution: wire.ExecutionToProto(e)})
			continue
		}
		resp, err := p.client.Guard(ctx, &pb.GuardRequest{HandlerId: g.GetHandlerId(), Execution: wire.ExecutionToProto(e)})
		if err == nil && resp.GetError() != "" {
			err = errors.New(resp.GetError())
		}
		if err != nil {
			return "", fmt.Errorf("guard %s failed: %w", listenerName(g), err)
		}
		if resp.GetReason() != "" {
			return resp.GetReason(), nil
		}
	}
	return "", nil
}

// Execute runs stage 3 for e: the plugin's stage-3 listeners around its
// tool e.Name. A tool the plugin did not register is an error.
func (p *Plugin) Execute(ctx context.Context, e wire.Execution) (wire.Outcome, error) {
	tool, ok := p.tool(e.Name)
	if !ok {
		return wire.Outcome{}, fmt.Errorf("the plugin registered no tool %q", e.Name)
	}
	return p.execFrom(ctx, wire.ExecutionToProto(e), tool, p.listeners(pb.Stage_STAGE_EXECUTE, e.Name))
}

func (p *Plugin) execFrom(ctx context.Context, e *pb.Execution, tool *pb.RegisterToolRequest, ls []*pb.ListenRequest) (wire.Outcome, error) {
	for i, l := range ls {
		req := &pb.WrapExecuteRequest{HandlerId: l.GetHandlerId(), Execution: e}
		var done func()
		if l.GetMode() == pb.ListenMode_LISTEN_MODE_WRAP {
			req.CallToken, done = p.host.chain.open(func(ctx context.Context) (*pb.NextResponse, error) {
				o, err := p.execFrom(ctx, e, tool, ls[i+1:])
				if err != nil {
					return nil, err
				}
				return &pb.NextResponse{Answer: &pb.NextResponse_Execute{Execute: wire.OutcomeToProto(o)}}, nil
			})
		}
		resp, err := p.client.WrapExecute(ctx, req)
		if done != nil {
			done()
		}
		if err == nil && resp.GetError() != "" {
			err = errors.New(resp.GetError())
		}
		if err != nil {
			return wire.Outcome{}, fmt.Errorf("stage-3 listener %s failed: %w", listenerName(l), err)
		}
		if resp.GetPass() {
			if done != nil {
				return wire.Outcome{}, fmt.Errorf("stage-3 WRAP listener %s answered pass: a wrapper answers an outcome", listenerName(l))
			}
			continue
		}
		return wire.OutcomeFromProto(resp.GetOutcome()), nil
	}
	resp, err := p.client.ExecuteTool(ctx, &pb.ExecuteToolRequest{HandlerId: tool.GetHandlerId(), Execution: e})
	if err != nil {
		return wire.Outcome{}, fmt.Errorf("tool %q failed: %w", e.GetName(), err)
	}
	if resp.GetError() != "" {
		return wire.Outcome{Error: &wire.ToolError{Code: wire.CodeToolError, Message: resp.GetError()}}, nil
	}
	return wire.Outcome{OK: true, Value: resp.GetValueJson()}, nil
}

// PostExecute runs the plugin's stage-4 listeners for e and what stage 3
// produced. All of them passing answers ReviewPass.
func (p *Plugin) PostExecute(ctx context.Context, e wire.Execution, o wire.Outcome) (wire.Review, error) {
	return p.postFrom(ctx, wire.ExecutionToProto(e), wire.OutcomeToProto(o), p.listeners(pb.Stage_STAGE_POST_EXECUTE, e.Name))
}

func (p *Plugin) postFrom(ctx context.Context, e *pb.Execution, o *pb.Outcome, ls []*pb.ListenRequest) (wire.Review, error) {
	for i, l := range ls {
		req := &pb.PostExecuteRequest{HandlerId: l.GetHandlerId(), Execution: e, Outcome: o}
		wrap := l.GetMode() == pb.ListenMode_LISTEN_MODE_WRAP
		var done func()
		if wrap {
			req.CallToken, done = p.host.chain.open(func(ctx context.Context) (*pb.NextResponse, error) {
				r, err := p.postFrom(ctx, e, o, ls[i+1:])
				if err != nil {
					return nil, err
				}
				return &pb.NextResponse{Answer: &pb.NextResponse_PostExecute{PostExecute: wire.ReviewToProto(r)}}, nil
			})
		}
		resp, err := p.client.PostExecute(ctx, req)
		if done != nil {
			done()
		}
		if err == nil && resp.GetError() != "" {
			err = errors.New(resp.GetError())
		}
		if err != nil {
			return wire.Review{}, fmt.Errorf("stage-4 listener %s failed: %w", listenerName(l), err)
		}
		r := wire.ReviewFromProto(resp.GetReview())
		if r.Verdict == wire.ReviewUnspecified || r.Verdict > wire.ReviewBlock {
			return r, fmt.Errorf("stage-4 listener %s answered verdict %v, not a review", listenerName(l), r.Verdict)
		}
		if r.Verdict != wire.ReviewPass || wrap {
			return r, nil
		}
	}
	return wire.Review{Verdict: wire.ReviewPass}, nil
}

// Approve asks the plugin's approver about e (question is the stage-1
// Ask's reason). A plugin with no approver is an error.
func (p *Plugin) Approve(ctx context.Context, e wire.Execution, question string) (wire.Approval, error) {
	for _, r := range p.Registrations() {
		a, ok := r.Request.(*pb.SetApproverRequest)
		if !ok {
			continue
		}
		resp, err := p.client.Approve(ctx, &pb.ApproveRequest{HandlerId: a.GetHandlerId(), Execution: wire.ExecutionToProto(e), Question: question})
		if err == nil && resp.GetError() != "" {
			err = errors.New(resp.GetError())
		}
		if err != nil {
			return wire.Approval{}, fmt.Errorf("approver %s failed: %w", listenerName(a), err)
		}
		return wire.ApprovalFromProto(resp), nil
	}
	return wire.Approval{}, errors.New("the plugin set no approver")
}

// Observe sends result to the plugin's stage-5 listeners on one Observe
// stream, as the host does, and returns once the plugin has handled them.
func (p *Plugin) Observe(ctx context.Context, e wire.Execution, result wire.ToolResult) error {
	ls := p.listeners(pb.Stage_STAGE_RESULT, e.Name)
	if len(ls) == 0 {
		return nil
	}
	stream, err := p.client.Observe(ctx)
	if err != nil {
		return fmt.Errorf("Observe: %w", err)
	}
	for _, l := range ls {
		req := &pb.ObserveRequest{HandlerId: l.GetHandlerId(), Execution: wire.ExecutionToProto(e), Result: wire.ToolResultToProto(result)}
		if err := stream.Send(req); err != nil {
			return fmt.Errorf("Observe: sending to %s: %w", listenerName(l), err)
		}
	}
	resp, err := stream.CloseAndRecv()
	if err != nil {
		return fmt.Errorf("Observe: %w", err)
	}
	if int(resp.GetReceived()) != len(ls) {
		return fmt.Errorf("Observe: the plugin acknowledged %d results of %d", resp.GetReceived(), len(ls))
	}
	return nil
}
