package remote

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// The proxies: each registration a plugin process makes becomes one of these
// pipeline functions, which make the RPC and turn every way it can fail into
// the error the pipeline maps fail-closed. Filters cost one RPC; wrappers get
// a call token and the plugin continues the chain through Host.Next.

func (in *instance) toolProxy(handler, name string) pipeline.ToolFunc {
	return func(ctx context.Context, e *pipeline.Execution) (any, error) {
		x, seen := in.execution(e)
		// The plugin's egress connections meanwhile name this call.
		defer in.egress.track(e.ID())()
		defer in.live.track(ctx, e)()
		req := &pb.ExecuteToolRequest{HandlerId: handler, Execution: x}
		if u := in.spec.Upstream; u != nil {
			tok, err := in.upstreamToken(ctx, u, e)
			if err != nil {
				return nil, &pipeline.Error{Code: pipeline.CodeDenied, Message: fmt.Sprintf("plugin %s: %v", in.name, err)}
			}
			req.UpstreamToken = tok
		}
		resp, err := roundTrip(ctx, in, "tool", in.calls.ExecuteTool, req, seen)
		if err != nil {
			if cerr := settle(ctx, err); cerr != nil {
				return nil, cerr
			}
			return nil, &pipeline.Error{Code: pipeline.CodeToolError, Message: in.callErr("tool "+name, err).Error()}
		}
		if resp.GetError() != "" {
			if cerr := settle(ctx, nil); cerr != nil {
				return nil, cerr
			}
			if u := in.spec.Upstream; u != nil && strings.HasPrefix(resp.GetError(), wire.UpstreamRefused) {
				if err := in.upstreamRefused(ctx, u, e.Principal()); err != nil {
					return nil, &pipeline.Error{Code: pipeline.CodeDenied, Message: fmt.Sprintf("plugin %s: %s; %v", in.name, wire.UpstreamRefused, err)}
				}
			}
			return nil, errors.New(resp.GetError())
		}
		if tl := in.tooLarge("tool "+name, len(resp.GetValueJson())); tl != nil {
			return nil, tl
		}
		return fromValueJSON(resp.GetValueJson()), nil
	}
}

// guardProxy is a remote guard in two steps: start sends the check, the
// func it returns waits for the verdict (pipeline.Registrar.StartedGuard).
// name is the guard's registered name (a safety rule's): the rule its
// failure or timeout is reported under, so that a rule in shadow stays in
// shadow when it fails. slot is the guard's place among the process's
// guards, by which a critical plugin's guard is found again in its next
// process to retry a call alone (solo.go).
func (in *instance) guardProxy(handler, name string, slot int) pipeline.GuardStart {
	return func(ctx context.Context, e *pipeline.Execution) func() (string, error) {
		if e.DryRun() && !in.dryRun || e.Visibility() && !in.visibility {
			return func() (string, error) { return "", pipeline.ErrNotAsked }
		}
		solo := in.mp != nil
		if solo {
			if err := in.mp.refused(e); err != nil {
				return func() (string, error) { return "", err }
			}
			if err := in.solo.enter(ctx, e.ID()); err != nil {
				err = fmt.Errorf("plugin %s: guard: waiting for a call retried alone: %w", in.name, err)
				return func() (string, error) { return "", err }
			}
		}
		rctx, cancel := in.filterCtx(ctx)
		start := time.Now()
		x, seen := in.execution(e)
		// Only a call in flight when the process died is retried; one sent
		// to a process already dead is denied at once, as before.
		sentAlive := !in.exited()
		wait := in.calls.startGuard(rctx, &pb.GuardRequest{HandlerId: handler, Execution: x})
		return func() (string, error) {
			defer cancel()
			resp, err := wait()
			in.timed("guard", start)
			if solo {
				in.solo.leave(e.ID())
			}
			if err == nil {
				seen()
			}
			if err != nil && solo && sentAlive && in.crashed(rctx, err) {
				// The process died during the call: these arguments may
				// be why, or another call's. Ask the next process alone.
				resp, err = in.mp.retryGuard(ctx, in, slot, e)
				if err != nil {
					return "", err
				}
			}
			if err != nil {
				pipeline.NoteRule(ctx, name)
				_ = settle(rctx, err)
				return "", in.callErr("guard", err)
			}
			rule := resp.GetRule()
			if rule == "" {
				rule = name
			}
			pipeline.NoteRule(ctx, rule)
			if resp.GetError() != "" {
				_ = settle(rctx, nil)
				return "", in.answered(ctx, rctx, nil, "guard", resp.GetError())
			}
			if resp.GetAnyArguments() {
				// Its pass holds for any arguments (a visibility question).
				pipeline.NoteAnyArguments(ctx)
			}
			return resp.GetReason(), nil
		}
	}
}

func (in *instance) approverProxy(handler string) pipeline.ApproverFunc {
	return func(ctx context.Context, e *pipeline.Execution, question string) (bool, error) {
		x, seen := in.execution(e)
		resp, err := roundTrip(ctx, in, "approver", in.calls.Approve, &pb.ApproveRequest{HandlerId: handler, Execution: x, Question: question}, seen)
		if err != nil {
			_ = settle(ctx, err)
			return false, in.callErr("approver", err)
		}
		if resp.GetError() != "" {
			_ = settle(ctx, nil)
			return false, errors.New(resp.GetError())
		}
		return wire.ApprovalFromProto(resp).Approved, nil
	}
}

// preProxy is a pre-execute listener; slot is its place among the
// process's filters, or its wrappers, by which a critical plugin's listener
// is found again in its next process to retry a call alone (solo.go).
func (in *instance) preProxy(h *hostService, handler string, wrap bool, slot int) pipeline.PreExecuteFunc {
	return func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
		if e.DryRun() && !in.dryRun || e.Visibility() && !in.visibility {
			// A plugin that did not say it understands dry runs might act
			// on the call: it is not sent one; nor the visibility question
			// to one that did not say it answers it (it may allow).
			return pipeline.Decision{}, pipeline.ErrNotAsked
		}
		solo := in.mp != nil
		if solo {
			if err := in.mp.refused(e); err != nil {
				return pipeline.Decision{}, err
			}
			if err := in.solo.enter(ctx, e.ID()); err != nil {
				return pipeline.Decision{}, fmt.Errorf("plugin %s: pre-execute listener: waiting for a call retried alone: %w", in.name, err)
			}
		}
		x, seen := in.execution(e)
		req := &pb.PreExecuteRequest{HandlerId: handler, Execution: x}
		var inner latest[pipeline.Decision]
		var nexts running
		rctx, b, token, release := in.listenerBound(ctx, h, wrap, func(b *budget) nextFunc { return nextToken(b, next, &inner, &nexts) })
		defer release()
		req.CallToken = token
		sentAlive := !in.exited() // as for a guard: only a call in flight is retried
		resp, err := roundTrip(rctx, in, "pre_execute", in.calls.PreExecute, req, seen)
		if solo {
			in.solo.leave(e.ID())
		}
		expired := b.stop()
		crashCtx := rctx
		if wrap {
			crashCtx = ctx // rctx is cancelled by b.stop; expired tells the budget's end
		}
		if err != nil && solo && sentAlive && !expired && in.crashed(crashCtx, err) {
			// The process died during the call: these arguments may be why,
			// or another call's. Ask the next process alone to tell.
			if wrap {
				resp, err = in.mp.retryWrapper(ctx, in, slot, e, next, &inner, &nexts)
			} else {
				resp, err = in.mp.retryFilter(ctx, in, slot, e)
			}
			if err != nil {
				return pipeline.Decision{}, err
			}
		}
		if err != nil {
			if expired && ctx.Err() == nil {
				return pipeline.Decision{}, b.err(in, "pre-execute listener")
			}
			_ = settle(rctx, err)
			return pipeline.Decision{}, in.callErr("pre-execute listener", err)
		}
		if resp.GetError() != "" {
			_ = settle(rctx, nil)
			return pipeline.Decision{}, in.answered(ctx, rctx, b.ranOut(expired, in, "pre-execute listener"), "pre-execute listener", resp.GetError())
		}
		if resp.GetNotAsked() && e.DryRun() {
			return pipeline.Decision{}, pipeline.ErrNotAsked
		}
		if resp.GetAnyArguments() {
			// Its answer holds for any arguments (a visibility question).
			pipeline.NoteAnyArguments(ctx)
		}
		d := wire.DecisionFromProto(resp.GetDecision())
		var out pipeline.Decision
		switch d.Verdict {
		case wire.VerdictPass:
			if wrap {
				return pipeline.Decision{}, errors.New("a wrapping listener answered PASS; it must call next")
			}
			// The rest of the chain is not this filter's time.
			return next(ctx), nil
		case pipeline.VerdictAllow:
			out = pipeline.Allow()
		case pipeline.VerdictDeny:
			out = pipeline.Deny(d.Reason)
		case pipeline.VerdictAsk:
			out = pipeline.Ask(d.Reason)
		default:
			return pipeline.Decision{}, fmt.Errorf("unknown decision %v", pb.Verdict(d.Verdict))
		}
		out.Rule = d.Rule
		if out.Verdict == pipeline.VerdictAsk {
			out.Route = d.Route
		}
		// Handing back what next returned keeps the inner decider's name.
		if prev := inner.get(); prev.Verdict == out.Verdict && prev.Reason == out.Reason {
			out.DecidedBy, out.Rule, out.Route = prev.DecidedBy, prev.Rule, prev.Route
		}
		return out, nil
	}
}

// execProxy bounds a stage-3 listener by its own time, wrapper or filter
// alike (the tool inside next has its own timeout): past it the call ends
// as a tool's timeout would, TOOL_TIMEOUT.
func (in *instance) execProxy(h *hostService, handler string, wrap bool) pipeline.ExecuteFunc {
	return func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
		x, seen := in.execution(e)
		req := &pb.WrapExecuteRequest{HandlerId: handler, Execution: x}
		rctx, b := in.startBudget(ctx)
		if wrap {
			req.CallToken = h.tokens.add(func(ctx context.Context) *pb.NextResponse {
				if !b.enter() {
					return nil
				}
				defer b.leave()
				return &pb.NextResponse{Answer: &pb.NextResponse_Execute{Execute: toOutcome(next(ctx))}}
			})
			defer h.tokens.remove(req.CallToken)
		}
		resp, err := roundTrip(rctx, in, "execute", in.calls.WrapExecute, req, seen)
		expired := b.stop()
		switch {
		case err != nil:
			if cerr := settle(ctx, err); cerr != nil {
				return pipeline.Fail(pipeline.CodeAborted, "call cancelled: "+cerr.Error())
			}
			if expired {
				return pipeline.Fail(pipeline.CodeToolTimeout, b.err(in, "execute listener").Error())
			}
			return pipeline.Fail(pipeline.CodeToolError, in.callErr("execute listener", err).Error())
		case resp.GetError() != "":
			if cerr := settle(ctx, nil); cerr != nil {
				return pipeline.Fail(pipeline.CodeAborted, "call cancelled: "+cerr.Error())
			}
			if expired {
				// Its "context deadline exceeded" beat gRPC's to the host.
				return pipeline.Fail(pipeline.CodeToolTimeout, b.err(in, "execute listener").Error())
			}
			return pipeline.Fail(pipeline.CodeToolError, "execute listener of "+in.name+" failed: "+resp.GetError())
		case resp.GetPass():
			return next(ctx)
		}
		if tl := in.tooLarge("execute listener", len(resp.GetOutcome().GetValueJson())); tl != nil {
			return pipeline.Result{Error: tl}
		}
		return fromOutcome(resp.GetOutcome())
	}
}

func (in *instance) postProxy(h *hostService, handler string, wrap bool) pipeline.PostExecuteFunc {
	return func(ctx context.Context, e *pipeline.Execution, r pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
		x, seen := in.execution(e)
		req := &pb.PostExecuteRequest{HandlerId: handler, Execution: x, Outcome: toOutcome(r)}
		var inner latest[pipeline.Review]
		rctx, b, token, release := in.listenerBound(ctx, h, wrap, func(b *budget) nextFunc {
			return func(ctx context.Context) *pb.NextResponse {
				if !b.enter() {
					return nil
				}
				defer b.leave()
				rv := next(ctx)
				inner.set(rv)
				return &pb.NextResponse{Answer: &pb.NextResponse_PostExecute{PostExecute: toReview(rv)}}
			}
		})
		defer release()
		req.CallToken = token
		resp, err := roundTrip(rctx, in, "post_execute", in.calls.PostExecute, req, seen)
		expired := b.stop()
		if err != nil {
			if expired && ctx.Err() == nil {
				return pipeline.Review{}, b.err(in, "post-execute listener")
			}
			_ = settle(rctx, err)
			return pipeline.Review{}, in.callErr("post-execute listener", err)
		}
		if resp.GetError() != "" {
			_ = settle(rctx, nil)
			return pipeline.Review{}, in.answered(ctx, rctx, b.ranOut(expired, in, "post-execute listener"), "post-execute listener", resp.GetError())
		}
		rv := wire.ReviewFromProto(resp.GetReview())
		var out pipeline.Review
		switch rv.Verdict {
		case wire.ReviewPass:
			if wrap {
				return pipeline.Review{}, errors.New("a wrapping listener answered PASS; it must call next")
			}
			// The rest of the chain is not this filter's time.
			return next(ctx), nil
		case pipeline.ReviewAccept:
			out = pipeline.Accept()
		case pipeline.ReviewReplace:
			out = pipeline.AcceptReplacing(fromValueJSON(rv.Value))
		case pipeline.ReviewBlock:
			out = pipeline.Block(rv.Feedback)
		default:
			return pipeline.Review{}, fmt.Errorf("unknown review %v", pb.ReviewVerdict(rv.Verdict))
		}
		if prev := inner.get(); prev.Action == out.Action && prev.Feedback == out.Feedback && out.Action != pipeline.ReviewReplace {
			out.DecidedBy = prev.DecidedBy
		}
		return out, nil
	}
}

// latest holds the last answer a WRAP listener's next produced. It is set by
// the Host.Next handler and read after the listener's RPC returns, two
// goroutines the network orders but the race detector cannot see.
type latest[T any] struct {
	mu sync.Mutex
	v  T
}

func (l *latest[T]) set(v T) { l.mu.Lock(); l.v = v; l.mu.Unlock() }

func (l *latest[T]) get() T { l.mu.Lock(); defer l.mu.Unlock(); return l.v }
