package remote

import (
	"context"
	"sync"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// observers delivers stage-5 results to one plugin process in order, on one
// stream, without holding up the caller. A graceful stop sends everything
// queued before the stream is closed; a dead process loses what was queued
// for it (an observer that must not miss a call belongs to a critical plugin).
type observers struct {
	in *instance

	mu      sync.Mutex
	wake    chan struct{} // signalled on push and close
	queue   []*pb.ObserveRequest
	closed  bool
	started bool
	done    chan struct{}
}

func newObservers(in *instance) *observers {
	return &observers{in: in, wake: make(chan struct{}, 1), done: make(chan struct{})}
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
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		// The stream dies with the process.
		select {
		case <-o.in.client.Exited():
			cancel()
		case <-ctx.Done():
		}
	}()
	stream, err := o.in.client.Observe(ctx)
	if err != nil {
		o.in.log.Error("result observers: cannot open the stream", "error", err)
		o.discard()
		return
	}
	for {
		o.mu.Lock()
		batch := o.queue
		o.queue = nil
		closed := o.closed
		o.mu.Unlock()
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

func (o *observers) discard() {
	o.mu.Lock()
	o.closed = true
	o.queue = nil
	o.mu.Unlock()
}

// drain stops accepting results and waits until what was queued is
// delivered, or ctx ends.
func (o *observers) drain(ctx context.Context) {
	o.mu.Lock()
	o.closed = true
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
