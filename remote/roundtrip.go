package remote

import (
	"context"
	"time"
)

// roundTrip makes one call into the plugin process, whatever its request
// and response: it times the call for Options.OnRPC and, once the plugin
// has answered, records that it holds the descriptor the request carried
// (seen, from instance.execution). Every proxy's call goes through it.
func roundTrip[Req, Resp any](ctx context.Context, in *instance, kind string, call func(context.Context, Req) (Resp, error), req Req, seen func()) (Resp, error) {
	start := time.Now()
	resp, err := call(ctx, req)
	in.timed(kind, start)
	if err == nil {
		seen()
	}
	return resp, err
}

// listenerBound bounds a stage-1 or stage-4 listener's call: a wrapper by
// its budget, with a call token through which the plugin runs the rest of
// the chain (next, given the budget); a filter by the listener timeout
// (no budget, no token). release undoes it once the call is over.
func (in *instance) listenerBound(ctx context.Context, h *hostService, wrap bool, next func(*budget) nextFunc) (rctx context.Context, b *budget, token string, release func()) {
	if !wrap {
		rctx, cancel := in.filterCtx(ctx)
		return rctx, nil, "", cancel
	}
	rctx, b = in.startBudget(ctx)
	token = h.tokens.add(next(b))
	return rctx, b, token, func() { h.tokens.remove(token) }
}
