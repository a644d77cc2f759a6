package remote

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
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
	// sourced counts the slots counted as receipt sources (guarded by
	// mu); refusedReceipts is set once receipts were dropped, to warn once.
	sourced         int
	refusedReceipts atomic.Bool

	send sync.Mutex // one batch in flight at a time, in queue order

	mu      sync.Mutex
	slots   []func()  // removes the slot's observer
	targets []*target // processes that registered listeners, oldest first
	queue   []queuedResult
	dropped int // results dropped because the queue was full
	resent  int // results of batches sent again after a delivery failed
	// crashes counts the deliveries of the queue's head in a row during
	// which the process died; single is how many results still go one at
	// a time because a batch holding them crashed it twice (see crashed).
	crashes, single int
	// unrecorded counts the results given up on because delivering each
	// alone crashed a process again; last says which was the last.
	unrecorded     int
	lastUnrecorded string
	// inflight is how many results the batch on its way holds (0 for
	// none): a bound on waiting for it grows with its size.
	inflight int
	wake     chan struct{}
	stop     chan struct{}
	done     chan struct{}
	started  bool
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
	// drainBatch bounds one batch while a stopping process drains (and
	// every batch of a plain observer): the drain waits as long as batches
	// are acknowledged, each within the drain timeout, so one must take
	// the plugin much less.
	drainBatch = 64
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
		limit := in.spec.maxResult()
		if d.receipts.accepts(d.name, in.receipts) {
			d.receipts.source(1)
			d.sourced++
		}
		d.slots = append(d.slots, d.tools.Observe(d.name, func(_ context.Context, e *pipeline.Execution, r pipeline.Result) error {
			d.push(slot, &pb.ObserveRequest{Execution: toExecution(e), Result: observed(r, limit), WantReceipt: d.receipts != nil})
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
			sent, more := d.sendBatch(ctx, t, durableBatch, 0)
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

// lockWithin takes mu unless ctx ends first.
func lockWithin(ctx context.Context, mu *sync.Mutex) bool {
	for !mu.TryLock() {
		select {
		case <-ctx.Done():
			return false
		case <-time.After(time.Millisecond):
		}
	}
	return true
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
//
// most bounds the batch; within, when not 0, bounds its delivery (from when
// the batch before it, perhaps still on its way, is done).
func (d *durableResults) sendBatch(ctx context.Context, t *target, most int, within time.Duration) (sent, more bool) {
	if within > 0 {
		// The batch before it may never come back (a plugin stuck in its
		// listener): the wait for it is bounded too, so that stopping the
		// process is never held up by it. It has a bound of its own,
		// within for each drainBatch of results it holds: it may be a full
		// batch (durableBatch) a healthy plugin is still working through,
		// and counting its time against this batch's bound would cut a
		// drain that is making progress.
		d.mu.Lock()
		ahead := max(1, (d.inflight+drainBatch-1)/drainBatch)
		d.mu.Unlock()
		lctx, cancel := context.WithTimeout(ctx, within*time.Duration(ahead))
		locked := lockWithin(lctx, &d.send)
		cancel()
		if !locked {
			d.mu.Lock()
			more = len(d.queue) > 0
			d.mu.Unlock()
			return false, more
		}
		ctx, cancel = context.WithTimeout(ctx, within)
		defer cancel()
	} else {
		d.send.Lock()
	}
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
	if d.single > 0 {
		most = 1
	}
	for _, q := range d.queue {
		if n == most || q.slot >= len(t.handlers) {
			// This process has not registered that listener yet.
			break
		}
		n++
		if h := t.handlers[q.slot]; h != "" {
			reqs = append(reqs, &pb.ObserveRequest{HandlerId: h, Execution: q.req.GetExecution(), Result: q.req.GetResult(), WantReceipt: q.req.GetWantReceipt()})
		}
	}
	in := t.in
	if n > 0 {
		d.inflight = n
	}
	d.mu.Unlock()
	if n == 0 {
		return false, true
	}
	resp, err := deliver(ctx, in, reqs)
	d.mu.Lock()
	d.inflight = 0
	d.mu.Unlock()
	if err != nil {
		in.log.Debug("durable results: delivery not acknowledged; it will be sent again", "results", len(reqs), "error", err)
		crashed := ctx.Err() == nil && !in.stoppedOnPurpose() && in.waitExited(exitGrace)
		d.mu.Lock()
		d.resent += len(reqs)
		more = true
		if crashed {
			more = d.crashedLocked(in, n)
		}
		d.mu.Unlock()
		return false, more
	}
	d.mu.Lock()
	d.queue = slices.Delete(d.queue, 0, n)
	d.crashes = 0
	d.single = max(d.single-n, 0)
	more = len(d.queue) > 0
	d.mu.Unlock()
	if !d.receipts.add(d.name, in.receipts, resp.GetReceipts()) && !d.refusedReceipts.Swap(true) {
		in.log.Warn("receipts dropped: the deployment takes receipts from another plugin (receipts_from)", "receipts", len(resp.GetReceipts()))
	}
	return true, more
}

// crashedLocked follows a delivery of the queue's first n results during
// which the process died, and reports whether results remain.
//
// A result can kill every process it is sent to (one too large for the
// plugin's memory, one that trips a bug): sent again and again, it would
// spend the plugin's restart budget and leave a critical plugin FAILED,
// every call DENIED, for one call. So a batch that crashed a process twice
// goes one result at a time, and a result that crashes a process on its own
// is given up on: logged, counted in the plugin's status, and not sent
// again. The results after it are delivered as usual.
func (d *durableResults) crashedLocked(in *instance, n int) bool {
	d.crashes++
	switch {
	case n == 1 && (d.single > 0 || d.crashes >= 2):
		q := d.queue[0]
		d.queue = slices.Delete(d.queue, 0, 1)
		d.crashes = 0
		d.single = max(d.single-1, 0)
		d.unrecorded++
		e := q.req.GetExecution()
		d.lastUnrecorded = fmt.Sprintf("call %s (tool %s)", e.GetId(), e.GetName())
		d.log.Error("a result crashed the plugin's process each time it was delivered: given up on, its listeners have not recorded it",
			"id", e.GetId(), "tool", e.GetName(), "result_bytes", len(q.req.GetResult().GetValueJson()), "unrecorded", d.unrecorded)
	case d.crashes >= 2 && d.single == 0:
		d.single = n
		d.crashes = 0
		in.log.Warn("a batch of results crashed the plugin's process twice: delivering them one at a time", "results", n)
	}
	return len(d.queue) > 0
}

// problem says what the plugin's listeners did not record, for its status;
// "" when nothing.
func (d *durableResults) problem() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.unrecorded == 0 {
		return ""
	}
	return fmt.Sprintf("%d result(s) crashed its process each time they were delivered and are not recorded by it (the last: %s); see the host log",
		d.unrecorded, d.lastUnrecorded)
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
// still reach it are done. When it is the plugin's only process (an unload,
// the host stopping), what is queued is delivered to it first: for as long
// as it keeps acknowledging, with stall (the drain timeout) as the longest
// wait for one batch. A fixed bound for the whole queue would drop the
// results of calls that have returned whenever the plugin is behind by more
// than that (an audit log fsyncing each line on a busy machine), and the
// host would stop as if they had been written. Otherwise another process
// takes the queue (the new one of a reload, or the old one of a reload that
// failed), and ctx bounds the wait for a batch already on its way to in.
func (d *durableResults) release(ctx context.Context, stall time.Duration, in *instance) {
	d.mu.Lock()
	t := d.targetLocked(in)
	alone := t != nil && !slices.ContainsFunc(d.targets, func(o *target) bool { return o.in != in && !o.in.exited() })
	d.mu.Unlock()
	progress := time.Now()
	for alone && !in.exited() {
		sent, more := d.sendBatch(context.Background(), t, drainBatch, stall)
		if sent {
			progress = time.Now()
		}
		if !more {
			break
		}
		if !sent {
			if time.Since(progress) >= stall {
				d.mu.Lock()
				n := len(d.queue)
				d.mu.Unlock()
				d.log.Warn("stopping a critical plugin's process with results it has not acknowledged: it acknowledged none for the drain timeout",
					"results", n, "drain_timeout", stall)
				break
			}
			time.Sleep(durableRetry)
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
	if !lockWithin(ctx, &d.send) {
		return
	}
	d.send.Unlock()
}

// close removes the observers and stops delivering; what is still queued is
// dropped (the plugin was unloaded on purpose).
func (d *durableResults) close() {
	d.mu.Lock()
	slots := d.slots
	d.slots = nil
	sourced := d.sourced
	d.sourced = 0
	started := d.started
	lost := len(d.queue)
	d.queue = nil
	d.mu.Unlock()
	for _, remove := range slots {
		remove()
	}
	d.receipts.source(-sourced)
	if started {
		close(d.stop)
		<-d.done
	}
	if lost > 0 {
		d.log.Warn("a critical plugin was unloaded with results its listeners never received", "results", lost)
	}
}
