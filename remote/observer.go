package remote

import (
	"context"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// observers delivers stage-5 results to one plugin process in order, on one
// stream, in paced batches (observeInterval), without holding up the
// caller. A graceful stop sends everything queued before the stream is
// closed; a dead process loses what was queued for it (an observer that must
// not miss a call belongs to a critical plugin).
type observers struct {
	in *instance

	mu      sync.Mutex
	wake    chan struct{} // signalled on push and close
	queue   []*pb.ObserveRequest
	closed  bool
	started bool
	flush   chan struct{} // closed with closed: stop pacing
	done    chan struct{}
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
	return &observers{in: in, wake: make(chan struct{}, 1), flush: make(chan struct{}), done: make(chan struct{})}
}

func (in *instance) observerProxy(handler string) pipeline.ResultFunc {
	return func(ctx context.Context, e *pipeline.Execution, r pipeline.Result) error {
		in.obs.push(&pb.ObserveRequest{HandlerId: handler, Execution: toExecution(e), Result: ToResult(r)})
		return nil
	}
}

func (o *observers) push(req *pb.ObserveRequest) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
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

// run owns the stream: it sends in queue order until closed and drained.
func (o *observers) run() {
	defer close(o.done)
	ctx, cancel := o.in.untilExit(context.Background())
	defer cancel()
	stream, err := o.in.client.Observe(ctx)
	if err != nil {
		o.in.log.Error("result observers: cannot open the stream", "error", err)
		o.discard()
		return
	}
	var last time.Time // when the last batch was sent
	for {
		if !o.pace(ctx, last) {
			o.discard()
			return
		}
		o.mu.Lock()
		batch := o.queue
		o.queue = nil
		closed := o.closed
		o.mu.Unlock()
		if len(batch) > 0 {
			last = time.Now()
		}
		for _, req := range batch {
			if err := stream.Send(req); err != nil {
				o.in.log.Error("result observers: delivery failed", "error", o.in.callErr("observe", err))
				o.discard()
				return
			}
		}
		if closed && len(batch) == 0 {
			if _, err := stream.CloseAndRecv(); err != nil {
				o.in.log.Warn("result observers: closing the stream", "error", err)
			}
			return
		}
		if len(batch) == 0 {
			select {
			case <-o.wake:
			case <-ctx.Done():
				o.discard()
				return
			}
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
// delivered, or ctx ends.
func (o *observers) drain(ctx context.Context) {
	o.mu.Lock()
	o.closeLocked()
	started := o.started
	o.mu.Unlock()
	if !started {
		return
	}
	o.signal()
	select {
	case <-o.done:
	case <-ctx.Done():
	}
}
