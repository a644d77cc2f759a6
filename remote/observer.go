package remote

import (
	"context"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// observers delivers stage-5 results to one plugin process in order, in
// paced batches (observeInterval), without holding up the caller. Each batch
// goes on a stream of its own, whose close returns once the plugin handled
// it: so the host knows how far the plugin is, and no more than a batch
// waits in the plugin's buffers unseen. A graceful stop delivers everything
// queued for as long as the plugin keeps acknowledging batches (drain); a
// dead process loses what was queued for it (an observer that must not miss
// a call belongs to a critical plugin).
type observers struct {
	in *instance

	mu      sync.Mutex
	wake    chan struct{} // signalled on push and close
	queue   []*pb.ObserveRequest
	closed  bool
	started bool
	flush   chan struct{} // closed with closed: stop pacing
	done    chan struct{}
	// sent is signalled each time the plugin acknowledged a batch: drain
	// waits as long as it does.
	sent chan struct{}
}

// observeInterval paces the sender: a batch goes out at most once per
// interval, so a result that follows the last batch by less waits for the
// rest of the interval with those that come meanwhile. A result after a
// quiet spell goes out at once.
//
// Why: sending each result as it comes costs a wake-up of the sender, a
// write and a wake-up of the observer's process for every call, CPU that the
// callers' own calls then wait for. Measured on 2 cores with a tool and
// three filters in four processes, that added ~12% to every call; a batch
// every 5ms still ~6%; every 20ms, nothing measurable (BenchmarkRemotePipeline).
// An observer hears of a call at most this much later under load.
const observeInterval = 20 * time.Millisecond

func newObservers(in *instance) *observers {
	return &observers{in: in, wake: make(chan struct{}, 1), flush: make(chan struct{}), done: make(chan struct{}), sent: make(chan struct{}, 1)}
}

func (in *instance) observerProxy(handler string) pipeline.ResultFunc {
	return func(ctx context.Context, e *pipeline.Execution, r pipeline.Result) error {
		req := &pb.ObserveRequest{HandlerId: handler, Result: observed(r, in.spec.maxResult())}
		in.obs.push(req, e)
		return nil
	}
}

// push queues req for e's result. Its execution is converted here, in
// queue order, so that a result carrying a tool's ref alone never goes
// before the one carrying its descriptor (observedExecution).
func (o *observers) push(req *pb.ObserveRequest, e *pipeline.Execution) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	req.Execution = o.in.observedExecution(e)
	o.queue = append(o.queue, req)
	if !o.started {
		o.started = true
		go o.run()
	}
	o.mu.Unlock()
	o.signal()
}

func (o *observers) signal() {
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// run sends the queue in order, a batch at a time, until closed and
// drained.
func (o *observers) run() {
	defer close(o.done)
	ctx, cancel := o.in.untilExit(context.Background())
	defer cancel()
	var last time.Time // when the last batch was sent
	backlog := false   // results were left after the last batch: send at once
	for {
		if !backlog && !o.pace(ctx, last) {
			o.discard()
			return
		}
		o.mu.Lock()
		n := min(len(o.queue), drainBatch)
		batch := o.queue[:n:n]
		o.queue = o.queue[n:]
		backlog = len(o.queue) > 0
		closed := o.closed
		o.mu.Unlock()
		if n > 0 {
			last = time.Now()
			if _, err := deliver(ctx, o.in, batch); err != nil {
				o.in.log.Error("result observers: delivery failed", "results", n, "error", o.in.callErr("observe", err))
				o.discard()
				return
			}
			select {
			case o.sent <- struct{}{}:
			default:
			}
			continue
		}
		if closed {
			return
		}
		select {
		case <-o.wake:
		case <-ctx.Done():
			o.discard()
			return
		}
	}
}

// pace waits until observeInterval has passed since last, or less once the
// observers are closed (a drain does not wait); false when the process died
// meanwhile.
func (o *observers) pace(ctx context.Context, last time.Time) bool {
	wait := observeInterval - time.Since(last)
	if wait <= 0 {
		return true
	}
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-t.C:
	case <-o.flush:
	case <-ctx.Done():
		return false
	}
	return true
}

func (o *observers) discard() {
	o.mu.Lock()
	o.closeLocked()
	o.queue = nil
	o.mu.Unlock()
}

func (o *observers) closeLocked() {
	if !o.closed {
		o.closed = true
		close(o.flush)
	}
}

// drain stops accepting results and waits until what was queued is
// delivered: for as long as the plugin keeps acknowledging batches, stall
// at most for each.
//
// Why not one bound for the whole queue: an observer behind by more than
// that (an audit log fsyncing each line on a busy machine) would be stopped
// with the results of calls that have returned still queued, and lose them.
// A plugin that acknowledges nothing for stall is stopped regardless.
func (o *observers) drain(stall time.Duration) {
	o.mu.Lock()
	o.closeLocked()
	started := o.started
	o.mu.Unlock()
	if !started {
		return
	}
	o.signal()
	t := time.NewTimer(stall)
	defer t.Stop()
	for {
		select {
		case <-o.done:
			return
		case <-o.sent:
			t.Reset(stall)
		case <-t.C:
			o.mu.Lock()
			n := len(o.queue)
			o.mu.Unlock()
			o.in.log.Warn("result observers: stopping the process with results it has not handled: it took none for the drain timeout",
				"queued", n, "drain_timeout", stall)
			return
		}
	}
}
