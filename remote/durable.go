package remote

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
)

// durableResults delivers a critical plugin's stage-5 results exactly once
// across the deaths, restarts and reloads of its process: an audit log that
// must not miss a call.
//
// The observers live in the host, not in a process: the plugin's n-th
// result listener, in whichever process registers it, is slot n. A slot
// queues every result (those of calls denied while the plugin is down
// included) until a process acknowledges it: a batch goes out on a stream of
// its own, and the stream's close returns once the plugin's listeners have
// handled every result in it. A batch a process did not acknowledge before
// it died is sent again to the next one; a listener that writes somewhere
// durable skips what it finds already written (the audit plugin checks the
// call ids at the end of its log). Results go to the newest live process, in
// order; the old process of a reload gets none once the new one registers.
type durableResults struct {
	name  string
	tools *pipeline.Tools
	log   hclog.Logger
	// receipts takes the receipts acknowledgements carry; nil when the
	// deployment asks for none (receipts.go).
	receipts *Receipts

	send sync.Mutex // one batch in flight at a time, in queue order

	mu      sync.Mutex
	slots   []func()  // removes the slot's observer
	targets []*target // processes that registered listeners, oldest first
	queue   []queuedResult
	dropped int // results dropped because the queue was full
	resent  int // results of batches sent again after a delivery failed
	wake    chan struct{}
	stop    chan struct{}
	done    chan struct{}
	started bool
}

type queuedResult struct {
	slot int
	req  *pb.ObserveRequest
}

// target is one process and the handler id of each slot it registered
// ("" for one it disposed of).
type target struct {
	in       *instance
	handlers []string
}

const (
	// durableBatch bounds one acknowledged batch.
	durableBatch = 256
	// durableQueueMax bounds what waits for a process; past it the oldest
	// results are dropped, loudly. A plugin down that long holds every
	// call DENIED anyway.
	durableQueueMax = 1 << 16
	// durableRetry is the pause after a failed delivery.
	durableRetry = 20 * time.Millisecond
)

func newDurableResults(name string, tools *pipeline.Tools, log hclog.Logger) *durableResults {
	return &durableResults{name: name, tools: tools, log: log, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// attach registers a result listener of the process in for the plugin's
// scope s: it takes the next slot, which is created the first time.
func (d *durableResults) attach(s *kernel.Scope, in *instance, handler string, tools []string) (*kernel.Effect, error) {
	d.mu.Lock()
	var t *target
	for _, x := range d.targets {
		if x.in == in {
			t = x
		}
	}
	if t == nil {
		t = &target{in: in}
		d.targets = append(d.targets, t)
	}
	slot := len(t.handlers)
	t.handlers = append(t.handlers, handler)
	if slot == len(d.slots) {
		d.receipts.source(1)
		d.slots = append(d.slots, d.tools.Observe(d.name, func(_ context.Context, e *pipeline.Execution, r pipeline.Result) error {
			d.push(slot, &pb.ObserveRequest{Execution: toExecution(e), Result: ToResult(r), WantReceipt: d.receipts != nil})
			return nil
		}, tools...))
	}
	if !d.started {
		d.started = true
		go d.run()
	}
	d.mu.Unlock()
	d.signal()
	return s.Track(fmt.Sprintf("result listener %s (durable slot %d)", handler, slot), func() error {
		// Only a plugin that disposes of its listener stops its results.
		// When its scope ends, the process keeps its listeners until it
		// stops, so that what is queued can still be delivered to it.
		if st := s.State(); st == kernel.Active || st == kernel.Loading {
			d.mu.Lock()
			t.handlers[slot] = ""
			d.mu.Unlock()
		}
		return nil
	})
}

func (d *durableResults) push(slot int, req *pb.ObserveRequest) {
	d.mu.Lock()
	d.queue = append(d.queue, queuedResult{slot: slot, req: req})
	if over := len(d.queue) - durableQueueMax; over > 0 {
		d.queue = slices.Delete(d.queue, 0, over)
		if d.dropped == 0 {
			d.log.Error("results for a critical plugin's listeners are being dropped: no process has taken them for too long", "queued", durableQueueMax)
		}
		d.dropped += over
	}
	d.mu.Unlock()
	d.signal()
}

func (d *durableResults) signal() {
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// currentLocked returns the process of the plugin's active version: not
// one a reload is still starting (its apply may not have opened what its
// listeners write to), nor one a reload or an unload is retiring.
func (d *durableResults) currentLocked() *target {
	for i := len(d.targets) - 1; i >= 0; i-- {
		t := d.targets[i]
		if !t.in.exited() && t.in.scope.State() == kernel.Active {
			return t
		}
	}
	return nil
}

func (d *durableResults) targetLocked(in *instance) *target {
	for _, t := range d.targets {
		if t.in == in {
			return t
		}
	}
	return nil
}

// run sends the queue in order, one acknowledged batch at a time, paced as
// the plain observers are.
func (d *durableResults) run() {
	defer close(d.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-d.stop
		cancel()
	}()
	var last time.Time
	full := false // the last batch was a full one: a backlog goes out at once
	for {
		select {
		case <-d.stop:
			return
		case <-d.wake:
		}
		for {
			if wait := observeInterval - time.Since(last); wait > 0 && !full {
				select {
				case <-d.stop:
					return
				case <-time.After(wait):
				}
			}
			d.mu.Lock()
			t := d.currentLocked()
			d.mu.Unlock()
			sent, more := d.sendBatch(ctx, t)
			full = sent && more
			if sent {
				last = time.Now()
			}
			if !more {
				break
			}
			if !sent {
				select {
				case <-d.stop:
					return
				case <-d.wake:
				case <-time.After(durableRetry):
				}
			}
		}
	}
}

// counts are the queue's length now, and how many results were sent again
// and dropped so far.
func (d *durableResults) counts() (queued, resent, dropped int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return len(d.queue), d.resent, d.dropped
}

// sendBatch delivers the head of the queue to t. It says whether a batch
// was acknowledged and whether results remain.
func (d *durableResults) sendBatch(ctx context.Context, t *target) (sent, more bool) {
	d.send.Lock()
	defer d.send.Unlock()
	d.mu.Lock()
	if t == nil || len(d.queue) == 0 || !slices.Contains(d.targets, t) {
		// Nothing to send, or t's process has been released since it
		// was chosen.
		more = len(d.queue) > 0
		d.mu.Unlock()
		return false, more
	}
	var reqs []*pb.ObserveRequest
	n := 0
	for _, q := range d.queue {
		if n == durableBatch || q.slot >= len(t.handlers) {
			// This process has not registered that listener yet.
			break
		}
		n++
		if h := t.handlers[q.slot]; h != "" {
			reqs = append(reqs, &pb.ObserveRequest{HandlerId: h, Execution: q.req.GetExecution(), Result: q.req.GetResult(), WantReceipt: q.req.GetWantReceipt()})
		}
	}
	in := t.in
	d.mu.Unlock()
	if n == 0 {
		return false, true
	}
	resp, err := deliver(ctx, in, reqs)
	if err != nil {
		in.log.Debug("durable results: delivery not acknowledged; it will be sent again", "results", len(reqs), "error", err)
		d.mu.Lock()
		d.resent += len(reqs)
		d.mu.Unlock()
		return false, true
	}
	d.mu.Lock()
	d.queue = slices.Delete(d.queue, 0, n)
	more = len(d.queue) > 0
	d.mu.Unlock()
	d.receipts.add(d.name, resp.GetReceipts())
	return true, more
}

// deliver sends reqs on a stream of their own and waits for the plugin to
// have handled them all.
func deliver(ctx context.Context, in *instance, reqs []*pb.ObserveRequest) (*pb.ObserveResponse, error) {
	if len(reqs) == 0 {
		return nil, nil
	}
	ctx, cancel := in.untilExit(ctx)
	defer cancel()
	stream, err := in.client.Observe(ctx)
	if err != nil {
		return nil, err
	}
	for _, req := range reqs {
		if err := stream.Send(req); err != nil {
			return nil, err
		}
	}
	return stream.CloseAndRecv()
}

// release is called when the process in stops, after the calls that could
// still reach it are done. When it is the plugin's only process (an unload),
// what is queued is delivered to it first, within ctx; otherwise another
// process takes the queue (the new one of a reload, or the old one of a
// reload that failed).
func (d *durableResults) release(ctx context.Context, in *instance) {
	d.mu.Lock()
	t := d.targetLocked(in)
	alone := t != nil && !slices.ContainsFunc(d.targets, func(o *target) bool { return o.in != in && !o.in.exited() })
	d.mu.Unlock()
	for alone && !in.exited() {
		sent, more := d.sendBatch(ctx, t)
		if !more {
			break
		}
		if !sent {
			select {
			case <-ctx.Done():
				d.mu.Lock()
				n := len(d.queue)
				d.mu.Unlock()
				d.log.Warn("stopping a critical plugin's process with results it has not acknowledged", "results", n)
				alone = false
			case <-time.After(durableRetry):
			}
		}
	}
	d.mu.Lock()
	d.targets = slices.DeleteFunc(d.targets, func(t *target) bool { return t.in == in })
	d.mu.Unlock()
	// A batch already on its way to in must come back before in is
	// stopped: stopping the process under it would lose its
	// acknowledgement, and the batch, handled, would go to the next
	// process again. (No batch starts for in from here on: sendBatch
	// sends only to a process still among the targets.)
	for !d.send.TryLock() {
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Millisecond):
		}
	}
	d.send.Unlock()
}

// close removes the observers and stops delivering; what is still queued is
// dropped (the plugin was unloaded on purpose).
func (d *durableResults) close() {
	d.mu.Lock()
	slots := d.slots
	d.slots = nil
	started := d.started
	lost := len(d.queue)
	d.queue = nil
	d.mu.Unlock()
	for _, remove := range slots {
		remove()
		d.receipts.source(-1)
	}
	if started {
		close(d.stop)
		<-d.done
	}
	if lost > 0 {
		d.log.Warn("a critical plugin was unloaded with results its listeners never received", "results", lost)
	}
}
