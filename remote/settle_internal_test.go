package remote

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// lateCtx is a context whose deadline has passed but whose timer has not
// fired yet: what a proxy sees when the plugin's side of the deadline fired
// first and its answer arrived before the host's timer did.
type lateCtx struct {
	context.Context
	deadline time.Time
	done     chan struct{}
	mu       sync.Mutex
	err      error
}

func newLateCtx(fireAfter time.Duration) *lateCtx {
	c := &lateCtx{Context: context.Background(), deadline: time.Now().Add(-time.Millisecond), done: make(chan struct{})}
	time.AfterFunc(fireAfter, func() {
		c.mu.Lock()
		c.err = context.DeadlineExceeded
		c.mu.Unlock()
		close(c.done)
	})
	return c
}

func (c *lateCtx) Deadline() (time.Time, bool) { return c.deadline, true }
func (c *lateCtx) Done() <-chan struct{}       { return c.done }
func (c *lateCtx) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

func TestSettle(t *testing.T) {
	t.Run("deadline_passed_timer_late", func(t *testing.T) {
		ctx := newLateCtx(20 * time.Millisecond)
		if ctx.Err() != nil {
			t.Fatal("the fake fired early")
		}
		if err := settle(ctx, nil); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("settle = %v, want DeadlineExceeded", err)
		}
		if ctx.Err() == nil {
			t.Error("settle returned before ctx agreed: the pipeline would read ctx.Err() == nil")
		}
	})
	t.Run("live_context", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		start := time.Now()
		if err := settle(ctx, nil); err != nil || time.Since(start) > 100*time.Millisecond {
			t.Errorf("settle = %v after %v, want nil at once", err, time.Since(start))
		}
		if err := settle(context.Background(), nil); err != nil {
			t.Errorf("settle without a deadline = %v", err)
		}
	})
	t.Run("plugin_clock_ahead", func(t *testing.T) {
		// The plugin's DEADLINE_EXCEEDED arrives 5ms before the host's
		// deadline: the same deadline, seen by a clock a little ahead.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		if err := settle(ctx, status.Error(codes.DeadlineExceeded, "deadline exceeded")); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("settle = %v, want DeadlineExceeded", err)
		}
		if ctx.Err() == nil {
			t.Error("settle returned before ctx agreed")
		}
	})
	t.Run("plugin_failure_before_the_deadline", func(t *testing.T) {
		// Any other failure, or a deadline far off, is the plugin's own.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
		defer cancel()
		if err := settle(ctx, status.Error(codes.Unavailable, "gone")); err != nil {
			t.Errorf("settle = %v, want nil", err)
		}
		far, cancelFar := context.WithTimeout(context.Background(), time.Minute)
		defer cancelFar()
		if err := settle(far, status.Error(codes.DeadlineExceeded, "deadline exceeded")); err != nil {
			t.Errorf("settle with a deadline a minute away = %v, want nil", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := settle(ctx, nil); !errors.Is(err, context.Canceled) {
			t.Errorf("settle = %v, want Canceled", err)
		}
	})
}
