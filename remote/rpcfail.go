package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// How a call into a plugin process is bounded and how its failures are
// told: the pieces every proxy (proxies.go) shares.

// callErr turns a transport error into an error that says which plugin and
// what failed.
func (in *instance) callErr(op string, err error) error {
	st, _ := status.FromError(err)
	switch {
	case st.Code() == codes.ResourceExhausted:
		return fmt.Errorf("plugin %s: %s: message larger than the %d-byte limit", in.name, op, in.maxMessage)
	case lifecycleOps[op] && (in.exited() || st.Code() == codes.Unavailable && in.waitExited(exitGrace)):
		return in.exitError(fmt.Errorf("plugin %s: %s: plugin process exited", in.name, op), op)
	case in.exited():
		return fmt.Errorf("plugin %s: %s: plugin process exited", in.name, op)
	case st.Code() == codes.Unavailable:
		return fmt.Errorf("plugin %s: %s: plugin unreachable: %s", in.name, op, st.Message())
	case st.Code() == codes.DeadlineExceeded:
		return fmt.Errorf("plugin %s: %s: no answer in time", in.name, op)
	}
	return fmt.Errorf("plugin %s: %s: %s", in.name, op, st.Message())
}

// lifecycleOps are the calls whose failure only the operator reads (it
// makes the plugin FAILED): when the process died during one, the error
// says how it ended and what it last wrote to stderr. A caller's call into
// a dead process is told no more than that it exited.
var lifecycleOps = map[string]bool{"describe": true, "apply": true}

// exitGrace bounds the wait, after the connection to a process broke,
// for go-plugin to see the process exit (it first reads its stderr to the
// end).
const exitGrace = time.Second

// waitExited reports whether the process exits within d.
func (in *instance) waitExited(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-in.client.Exited():
		return true
	case <-t.C:
		return false
	}
}

// settle makes a failed RPC agree with ctx about its deadline. The deadline
// crosses the boundary and the plugin runs its own timer for it, so the
// plugin's answer to a call whose deadline passed (its handler's "context
// deadline exceeded", or gRPC's DEADLINE_EXCEEDED) can arrive before ctx's
// own timer has fired. The pipeline reads ctx.Err() to tell a timeout or a
// cancellation from a plugin's failure (TOOL_TIMEOUT and ABORTED against
// TOOL_ERROR, "timed out" against "failed"), so once the deadline has passed
// this waits for ctx to be done and returns its error. It returns nil when
// ctx is live and its deadline has not passed.
//
// rpcErr is the RPC's own error, nil for an answer. A DEADLINE_EXCEEDED
// status is the plugin saying the deadline passed by its clock, which may
// be a little ahead of the host's (gRPC's C core, under Python's grpcio,
// keeps deadlines to the millisecond): when ctx's deadline is within
// clockSkew, it is the same deadline.
func settle(ctx context.Context, rpcErr error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d, ok := ctx.Deadline()
	if !ok {
		return nil
	}
	if left := time.Until(d); left > clockSkew || left > 0 && status.Code(rpcErr) != codes.DeadlineExceeded {
		return nil
	}
	t := time.NewTimer(time.Until(d) + time.Second)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C: // not reached: a passed deadline fires ctx's timer
		return context.DeadlineExceeded
	}
}

// clockSkew bounds how far ahead of the host a plugin's clock may see a
// deadline pass.
const clockSkew = 50 * time.Millisecond

// timed reports, when the host asked (Options.OnRPC), how long a call into
// the plugin took: defer in.timed(kind, time.Now()).
func (in *instance) timed(kind string, start time.Time) {
	if in.onRPC != nil {
		in.onRPC(in.name, kind, time.Since(start))
	}
}

// filterCtx bounds a filter's RPC by the listener timeout. The deadline
// crosses the boundary, so the plugin's handler sees it too. (A wrapper's
// bound is a budget instead: see budget.go.)
// answered is the error a listener answered with. A listener whose time
// ran out (a filter's deadline, or a wrapper's budget, ranOut) may answer
// "context deadline exceeded" just before gRPC's own DEADLINE_EXCEEDED
// reaches the host, since the plugin runs the same deadline: that answer
// is the listener's timeout, and says so, as gRPC's would.
func (in *instance) answered(ctx, rctx context.Context, ranOut error, op, msg string) error {
	switch {
	case ctx.Err() != nil:
	case ranOut != nil:
		return ranOut
	case errors.Is(rctx.Err(), context.DeadlineExceeded):
		return fmt.Errorf("plugin %s: %s: no answer in time", in.name, op)
	}
	return errors.New(msg)
}

func (in *instance) filterCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	if in.listenerTimeout <= 0 {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, in.listenerTimeout)
}
