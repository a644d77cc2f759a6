package mcpserver

import (
	"context"
	"crypto/rand"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/host"
)

// A 2026-07-28 client's call held for an approval route's approvers (issue
// 43 routes) does not hold its HTTP request for the whole wait. The
// protocol as the Go SDK v1.8 speaks it has no tasks extension; what it
// has is the input-required result, and one with no input request at all
// is a "come back later" (the SDK's load-shedding round): the client
// retries at once with the requestState and nothing to answer.
//
//   - When the call starts to wait, it is detached from the request: it
//     keeps waiting on this replica (its context is the server's, not the
//     request's), and the request is answered input-required with no input
//     request and a sealed requestState naming it.
//   - The retry opens the state (same principal, tool and arguments, as
//     for an Ask) and picks the call up: it waits for the decision for at
//     most holdFor, with progress notifications, and answers the result,
//     or input-required again, sealed anew, for another round.
//   - A call decided between two rounds keeps its result for the next
//     retry, for keepResult. The route's timeout still ends the call.
//   - A call no retry picks up within pickupWithin of its last round is
//     withdrawn (ABORTED, its approval request with it): its client gave up
//     (the SDK's stops after three empty rounds), and a call nobody waits
//     for must not run once approved.
//
// The call lives on the replica where it started: a retry that reaches
// another replica finds nothing there and is answered input-required
// again, so that a load balancer may send the next round elsewhere. The
// SDK's client gives up at the third empty round (the first comes back at
// once), so with it a route's wait is bounded by about 2 × holdFor; a
// client that drives its retries itself may wait as long as the route
// does.

// holdFor bounds each request of a routed wait: well inside the request
// timeouts of HTTP proxies and clients.
const holdFor = 25 * time.Second

// keepResult is how long a detached call's result waits for its retry.
const keepResult = time.Minute

// pickupWithin is how long a detached call waits for a retry to pick it
// up before it is withdrawn: a client retries at once.
const pickupWithin = 30 * time.Second

// waitInput marks a sealed state that names a detached call.
const waitInput = "wait"

// detached are the calls waiting for a route's approvers apart from any
// request, by the random token their sealed states name.
type detached struct {
	mu    sync.Mutex
	calls map[string]*detachedCall
}

type detachedCall struct {
	c       *call
	w       host.Waiting
	drop    *time.Timer // set once the call is done: forgets it after keepResult
	abandon *time.Timer // withdraws the call when no retry picks it up
}

// detach keeps c, which now waits for w, for a retry, and returns its
// token. The call is forgotten keepResult after it ends.
func (s *Server) detach(c *call, w host.Waiting) string {
	token := rand.Text()
	d := &detachedCall{c: c, w: w}
	s.detached.mu.Lock()
	if s.detached.calls == nil {
		s.detached.calls = map[string]*detachedCall{}
	}
	s.detached.calls[token] = d
	d.abandon = time.AfterFunc(pickupWithin, func() { s.abandon(token, d) })
	s.detached.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		<-c.done
		s.detached.mu.Lock()
		if _, ok := s.detached.calls[token]; ok {
			d.drop = time.AfterFunc(keepResult, func() { s.pickUp(token) })
		}
		s.detached.mu.Unlock()
	}()
	return token
}

// pickUp takes the detached call token names; nil when this replica has
// none (another replica's, or forgotten).
func (s *Server) pickUp(token string) *detachedCall {
	s.detached.mu.Lock()
	defer s.detached.mu.Unlock()
	d := s.detached.calls[token]
	delete(s.detached.calls, token)
	if d != nil {
		d.abandon.Stop()
		if d.drop != nil {
			d.drop.Stop()
		}
	}
	return d
}

// abandon withdraws d, still waiting under token with no retry to pick it
// up; its result (ABORTED) is kept as any other's.
func (s *Server) abandon(token string, d *detachedCall) {
	s.detached.mu.Lock()
	defer s.detached.mu.Unlock()
	if s.detached.calls[token] == d {
		d.c.cancel()
	}
}

// comeBack is the input-required result with no input request whose
// sealed state names the detached call token.
func (s *Server) comeBack(req *mcp.CallToolRequest, token string, w host.Waiting) *mcp.CallToolResult {
	state := s.sealer.seal(sealedAsk{
		Principal: s.principal(req).String(),
		Tool:      req.Params.Name,
		Args:      digest(canonicalArgs(req.Params.Arguments)),
		Question:  token,
		Input:     waitInput,
		Call:      w.Request,
		Expires:   w.Expires.Add(keepResult).UnixMilli(),
	})
	return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{}, RequestState: state}
}

// resume serves a retry of a routed wait: the detached call's result, or
// another round.
func (s *Server) resume(ctx context.Context, req *mcp.CallToolRequest, a sealedAsk) (*mcp.CallToolResult, error) {
	d := s.pickUp(a.Question)
	if d == nil {
		// Not on this replica (or its result was not fetched in time):
		// another round, which a load balancer may send elsewhere, until
		// the state expires.
		return s.comeBack(req, a.Question, host.Waiting{Request: a.Call, Expires: time.UnixMilli(a.Expires).Add(-keepResult)}), nil
	}
	wait := hold(ctx, req, d.w)
	defer wait.stop()
	round := time.NewTimer(holdFor)
	defer round.Stop()
	for {
		select {
		case <-d.c.done:
			return toolResult(d.c.result), nil
		case <-wait.ticks():
			wait.notify(ctx, req)
		case <-round.C:
			token := s.redetach(a.Question, d)
			return s.comeBack(req, token, d.w), nil
		case <-ctx.Done():
			// The client gave up on the call: it ends, and withdraws its
			// approval request.
			d.c.cancel()
			return nil, ctx.Err()
		}
	}
}

// redetach puts d back for the next round under its token.
func (s *Server) redetach(token string, d *detachedCall) string {
	s.detached.mu.Lock()
	defer s.detached.mu.Unlock()
	if s.detached.calls == nil {
		s.detached.calls = map[string]*detachedCall{}
	}
	s.detached.calls[token] = d
	d.abandon = time.AfterFunc(pickupWithin, func() { s.abandon(token, d) })
	select {
	case <-d.c.done:
		if d.drop == nil {
			d.drop = time.AfterFunc(keepResult, func() { s.pickUp(token) })
		}
	default:
	}
	return token
}

// entryCallKey marks the context of a resources or prompts request's call:
// such a call is held with its request, never detached (its request has
// no result that could say input-required with a state).
type entryCallKey struct{}
