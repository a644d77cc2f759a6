package policy

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"time"
)

// SlotStore counts each principal's calls in flight across every host that
// shares it: a distributed semaphore of leases that lapse unless renewed,
// so that a host that dies gives its slots back within one lease's time.
type SlotStore interface {
	// Acquire takes one of key's limit slots under lease, for ttl,
	// atomically across the hosts; running is how many slots key holds
	// (this one included when ok).
	Acquire(ctx context.Context, key, lease string, limit int, ttl time.Duration) (ok bool, running int, err error)
	// Renew keeps lease for ttl more; false when it lapsed and is gone.
	Renew(ctx context.Context, key, lease string, ttl time.Duration) (bool, error)
	// Release gives lease's slot back.
	Release(ctx context.Context, key, lease string) error
}

// DefaultLeaseTTL is how long a shared slot outlives a host that died
// holding it. A call that runs longer keeps its slot: its host renews the
// lease every third of it.
const DefaultLeaseTTL = 30 * time.Second

// releaseTimeout bounds giving a slot back: the call has ended, and its
// answer waits for this.
const releaseTimeout = time.Second

// errLeaseLost is what the metrics are told of a renewal that found its
// lease gone.
var errLeaseLost = errors.New("the lease had lapsed: the store could not be reached to renew it for longer than its time to live")

// acquire takes a shared slot for one call of who and returns what gives
// it back (call it once, however the call ends), or says why not.
func (l *principalLimits) acquire(ctx context.Context, who string) (held func(), why string) {
	lease := newLease()
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	start := time.Now()
	ok, running, err := l.cfg.Slots.Acquire(sctx, who, lease, l.cfg.Concurrency, l.cfg.LeaseTTL)
	cancel()
	l.observe("acquire", start, err)
	switch {
	case err != nil:
		// The script may have run with its answer lost (a timeout, the
		// caller gone): give back a lease that may be there rather than
		// have it hold a slot for a whole TTL. A failed dial sent nothing.
		if !dialFailed(err) {
			l.giveBack(ctx, who, lease)
		}
		if !l.cfg.StoreFallback {
			return nil, fmt.Sprintf("the shared concurrency limit store cannot be reached, and on_store_error is deny: %v", err)
		}
		// take counted this call in running, not checking it.
		if n := l.runningHere(who); n > l.cfg.Concurrency {
			return nil, fmt.Sprintf("%s already has %d calls running (at most %d at once; this replica's count: the shared store cannot be reached)", who, n-1, l.cfg.Concurrency)
		}
		return func() {}, ""
	case !ok:
		return nil, fmt.Sprintf("%s already has %d calls running across every replica (at most %d at once)", who, running, l.cfg.Concurrency)
	}
	return l.hold(ctx, who, lease), ""
}

// hold renews lease while the call runs, every third of its TTL, so that a
// call of any length keeps its slot while a dead host's slots lapse. What
// it returns stops the renewals and releases the lease, on a context the
// caller's cancellation does not reach: a call whose client went away
// still gives its slot back.
func (l *principalLimits) hold(ctx context.Context, who, lease string) func() {
	ttl := l.cfg.LeaseTTL
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
			}
			c, cancel := context.WithTimeout(rctx, min(storeTimeout, ttl/3))
			start := time.Now()
			ok, err := l.cfg.Slots.Renew(c, who, lease, ttl)
			cancel()
			if rctx.Err() != nil {
				return // the call ended meanwhile; no fault of the store
			}
			if err == nil && !ok {
				// Another call may have its slot by now: this one runs on
				// uncounted, there is nothing left to renew.
				l.observe("renew", start, errLeaseLost)
				return
			}
			l.observe("renew", start, err) // an error: try again next tick
		}
	}()
	return func() {
		stop()
		<-done
		l.giveBack(ctx, who, lease)
	}
}

// giveBack releases lease on a context of its own, the caller's values
// without its cancellation.
func (l *principalLimits) giveBack(ctx context.Context, who, lease string) {
	c, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	start := time.Now()
	l.observe("release", start, l.cfg.Slots.Release(c, who, lease))
}

// dialFailed says whether err is a failure to connect, so that the store
// never got the question.
func dialFailed(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

// runningHere is how many calls of who this process runs.
func (l *principalLimits) runningHere(who string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.by[who]; b != nil {
		return b.running
	}
	return 0
}

func (l *principalLimits) observe(op string, start time.Time, err error) {
	if l.cfg.OnStore != nil {
		l.cfg.OnStore(op, time.Since(start), err)
	}
}

// newLease names a lease at random, so that no two calls on any host
// share a name.
func newLease() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (Go 1.24)
	return hex.EncodeToString(b[:])
}
