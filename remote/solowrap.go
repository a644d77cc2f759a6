package remote

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// A critical plugin's wrapping pre-execute listeners are retried alone as
// its filters are (solo.go). A wrapper may have called next, the rest of
// the chain, before its process died: the retry waits for that next to
// end, then asks the wrapper in the next process with a new call token,
// whose next runs the rest of the chain again (its listeners are asked
// again, as the retried wrapper is).

// addPreWrapper records a wrapping pre-execute listener the process
// registered and returns its slot.
func (in *instance) addPreWrapper(name, handler string) int {
	in.preMu.Lock()
	defer in.preMu.Unlock()
	in.preWrappers = append(in.preWrappers, preFilter{name: name, handler: handler})
	return len(in.preWrappers) - 1
}

func (in *instance) preWrapperAt(slot int) (preFilter, bool) {
	in.preMu.Lock()
	defer in.preMu.Unlock()
	if slot < 0 || slot >= len(in.preWrappers) {
		return preFilter{}, false
	}
	return in.preWrappers[slot], true
}

// running counts a wrapper's nexts in progress.
type running struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n falls to 0
}

func (r *running) enter() {
	r.mu.Lock()
	if r.n == 0 {
		r.idle = make(chan struct{})
	}
	r.n++
	r.mu.Unlock()
}

func (r *running) leave() {
	r.mu.Lock()
	if r.n--; r.n == 0 {
		close(r.idle)
	}
	r.mu.Unlock()
}

// wait waits until no next is in progress, or ctx ends.
func (r *running) wait(ctx context.Context) error {
	r.mu.Lock()
	if r.n == 0 {
		r.mu.Unlock()
		return nil
	}
	idle := r.idle
	r.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// nextToken is what a wrapper's call token runs when the plugin calls
// next: the rest of the chain, with the wrapper's budget paused, its
// decision kept in inner.
func nextToken(b *budget, next pipeline.DecideNext, inner *latest[pipeline.Decision], nexts *running) func(context.Context) *pb.NextResponse {
	return func(ctx context.Context) *pb.NextResponse {
		if !b.enter() {
			return nil
		}
		defer b.leave()
		nexts.enter()
		defer nexts.leave()
		d := next(ctx)
		inner.set(d)
		return &pb.NextResponse{Answer: &pb.NextResponse_PreExecute{PreExecute: toDecision(d)}}
	}
}

// retryWrapper asks the wrapper in slot again alone (retryAlone) for e,
// whose call was in it when the process dead died, once the next it may
// have called then has ended.
func (mp *managed) retryWrapper(ctx context.Context, dead *instance, slot int, e *pipeline.Execution, next pipeline.DecideNext, inner *latest[pipeline.Decision], nexts *running) (*pb.PreExecuteResponse, error) {
	want, _ := dead.preWrapperAt(slot)
	a := aloneAsk{kind: "pre-execute listener", name: "pre-execute listener", ownTime: true}
	if want.name != "" {
		a.name += " " + want.name
	}
	if err := nexts.wait(ctx); err != nil {
		return nil, fmt.Errorf("plugin %s: %s: plugin process exited; waiting for the rest of the chain it ran to end: %w", dead.name, a.name, err)
	}
	a.same = func(in *instance) bool {
		w, ok := in.preWrapperAt(slot)
		return ok && w.name == want.name
	}
	var resp *pb.PreExecuteResponse
	a.ask = func(ctx context.Context, in *instance) error {
		h := in.host.Load()
		if h == nil {
			return fmt.Errorf("plugin %s: %s: its next process is not applied yet", in.name, a.name)
		}
		w, _ := in.preWrapperAt(slot)
		x, seen := in.execution(e)
		rctx, b := in.startBudget(ctx)
		req := &pb.PreExecuteRequest{HandlerId: w.handler, Execution: x, CallToken: h.tokens.add(nextToken(b, next, inner, nexts))}
		defer h.tokens.remove(req.CallToken)
		start := time.Now()
		r, err := in.calls.PreExecute(rctx, req)
		in.timed("pre_execute", start)
		if expired := b.stop(); expired && ctx.Err() == nil {
			return b.err(in, a.name)
		}
		if err == nil {
			seen()
			resp = r
		}
		return err
	}
	if err := mp.retryAlone(ctx, dead, e, a); err != nil {
		return nil, err
	}
	return resp, nil
}
