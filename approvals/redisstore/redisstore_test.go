package redisstore

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
	"github.com/plugkit-go/plugkit/shared/identity"
)

var (
	caller = identity.Principal{ID: "ci-bot", Kind: "key", Attributes: []string{"group:oncall"}}
	ann    = identity.Principal{ID: "ann", Kind: "user", Attributes: []string{"group:oncall"}}
	bob    = identity.Principal{ID: "bob", Kind: "user", Attributes: []string{"group:oncall"}}
	eve    = identity.Principal{ID: "eve", Kind: "user", Attributes: []string{"group:sales"}}
)

const lease = time.Second

func oncall(quorum int, timeout time.Duration) approvals.Route {
	return approvals.Route{Name: "oncall", Approvers: []string{"group:oncall"}, Quorum: quorum, Timeout: timeout}
}

// dying is a store whose replica can be made to die: from kill on, it
// neither renews nor releases its lease, as a process killed with
// SIGKILL.
type dying struct {
	*Store
	mu   sync.Mutex
	dead bool
}

func (d *dying) kill() { d.mu.Lock(); d.dead = true; d.mu.Unlock() }

func (d *dying) isDead() bool { d.mu.Lock(); defer d.mu.Unlock(); return d.dead }

func (d *dying) Hold(ctx context.Context, holder string, ttl time.Duration) error {
	if d.isDead() {
		return nil
	}
	return d.Store.Hold(ctx, holder, ttl)
}

func (d *dying) Release(ctx context.Context, holder string) error {
	if d.isDead() {
		return nil
	}
	return d.Store.Release(ctx, holder)
}

// replica is one host's service on the shared server.
type replica struct {
	svc   *approvals.Service
	st    *dying
	ended chan approvals.Request // its Ended events
	// abandoned are the requests it marked abandoned.
	abandoned chan approvals.Request
}

func newReplica(t *testing.T, url, name string) *replica {
	t.Helper()
	st, err := Open(url)
	if err != nil {
		t.Fatal(err)
	}
	r := &replica{st: &dying{Store: st}, ended: make(chan approvals.Request, 16), abandoned: make(chan approvals.Request, 16)}
	r.svc = approvals.NewShared(approvals.Events{
		Ended:     func(q approvals.Request) { r.ended <- q },
		Abandoned: func(q approvals.Request) { r.abandoned <- q },
	}, r.st, name, lease)
	t.Cleanup(func() { r.svc.Close(); st.Close() })
	return r
}

// park asks on r and returns the pending request and the Ask's outcome.
func park(t *testing.T, r *replica, ctx context.Context, route approvals.Route, args string) (approvals.Request, <-chan approvals.Request) {
	t.Helper()
	pending := make(chan approvals.Request, 1)
	done := make(chan approvals.Request, 1)
	go func() {
		req, _ := r.svc.Ask(ctx, route, approvals.Call{ID: "c-" + args, Tool: "files_delete", Arguments: args, Principal: caller, Caller: "mcp#1"},
			func(q approvals.Request) { pending <- q })
		done <- req
	}()
	select {
	case q := <-pending:
		return q, done
	case q := <-done:
		t.Fatalf("Ask ended before it waited: %+v", q)
	}
	return approvals.Request{}, nil
}

func recv[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatalf("no %s", what)
	}
	var zero T
	return zero
}

// TestAnsweredOnAnotherReplica: a call parked on A is listed on B,
// answered there under the same rules as on one host (the caller cannot
// answer, nor anyone the route does not name, nor an answer for other
// arguments; a quorum needs distinct principals), and resumes on A with
// B's approvers on its record.
func TestAnsweredOnAnotherReplica(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	a, b := newReplica(t, srv.URL(), "replica-a"), newReplica(t, srv.URL(), "replica-b")
	req, done := park(t, a, context.Background(), oncall(2, time.Minute), `{"path":"a"}`)
	if req.Holder != "replica-a" {
		t.Fatalf("holder = %q", req.Holder)
	}
	list, err := b.svc.List()
	if err != nil || len(list) != 1 || list[0].ID != req.ID || list[0].State != approvals.Pending || list[0].Arguments != `{"path":"a"}` {
		t.Fatalf("B lists %+v, %v", list, err)
	}
	for _, c := range []struct {
		by   identity.Principal
		args string
		want error
	}{
		{caller, "", approvals.ErrSelf},
		{eve, "", approvals.ErrNotApprover},
		{ann, approvals.Digest(`{"path":"b"}`), approvals.ErrStale},
	} {
		if _, err := b.svc.Decide(req.ID, c.by, true, "", c.args); !errors.Is(err, c.want) {
			t.Errorf("B: %s answers: %v, want %v", c.by, err, c.want)
		}
	}
	if q, err := b.svc.Decide(req.ID, ann, true, "", req.ArgsSHA256); err != nil || q.State != approvals.Pending || q.Approvals() != 1 {
		t.Fatalf("B: ann approves: %+v %v", q, err)
	}
	// The same principal on the other replica does not make a quorum.
	if _, err := a.svc.Decide(req.ID, ann, true, "", ""); !errors.Is(err, approvals.ErrAnswered) {
		t.Fatalf("A: ann again: %v, want ErrAnswered", err)
	}
	if q, err := a.svc.Decide(req.ID, bob, true, "", ""); err != nil || q.State != approvals.Approved {
		t.Fatalf("A: bob approves: %+v %v", q, err)
	}
	got := recv(t, done, "end of the Ask on A")
	if got.State != approvals.Approved || got.Reason != "approved by user:ann, user:bob" || len(got.Decisions) != 6 {
		t.Fatalf("A's call ended %+v", got)
	}
	if e := recv(t, a.ended, "A's Ended event"); e.ID != req.ID {
		t.Errorf("A's Ended: %+v", e)
	}
	select {
	case e := <-b.ended:
		t.Errorf("B told of an end of a call it does not hold: %+v", e)
	default:
	}

	// Answered on B, a deny reaches A with its reason.
	req, done = park(t, a, context.Background(), oncall(1, time.Minute), `{"path":"c"}`)
	if _, err := b.svc.Decide(req.ID, bob, false, "not today", ""); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, done, "the denied Ask"); got.State != approvals.Denied || got.Reason != "denied by user:bob: not today" {
		t.Fatalf("denied on B: %+v", got)
	}
	if _, err := b.svc.Decide(req.ID, ann, true, "", ""); !errors.Is(err, approvals.ErrNotPending) {
		t.Errorf("an answer after the end: %v", err)
	}
}

// TestEndsSeenByEveryReplica: a route's timeout and a withdrawn call end
// the request in the store, as every replica lists it.
func TestEndsSeenByEveryReplica(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	a, b := newReplica(t, srv.URL(), "replica-a"), newReplica(t, srv.URL(), "replica-b")
	req, done := park(t, a, context.Background(), oncall(1, 200*time.Millisecond), `{"path":"t"}`)
	if got := recv(t, done, "the timed-out Ask"); got.State != approvals.TimedOut {
		t.Fatalf("timed out: %+v", got)
	}
	if q, err := b.svc.Get(req.ID); err != nil || q.State != approvals.TimedOut || !strings.Contains(q.Reason, "no approval within 200ms") {
		t.Fatalf("B shows the timed-out request as %+v, %v", q, err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	req, done = park(t, a, ctx, oncall(1, time.Minute), `{"path":"w"}`)
	cancel()
	recv(t, done, "the withdrawn Ask")
	if q, err := b.svc.Get(req.ID); err != nil || q.State != approvals.Withdrawn {
		t.Fatalf("B shows the withdrawn request as %+v, %v", q, err)
	}
	if _, err := b.svc.Get("apr-nope"); !errors.Is(err, approvals.ErrNotFound) {
		t.Errorf("an unknown request: %v", err)
	}
}

// TestAbandonedWhenItsHolderDies: a replica that stops renewing its lease
// (killed) leaves its pending requests abandoned on every other replica,
// and an answer to one is refused saying so; the live replica's requests
// stay pending.
func TestAbandonedWhenItsHolderDies(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	a, b := newReplica(t, srv.URL(), "replica-a"), newReplica(t, srv.URL(), "replica-b")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	lost, done := park(t, a, ctx, oncall(1, time.Minute), `{"path":"lost"}`)
	kept, keptDone := park(t, b, ctx, oncall(1, time.Minute), `{"path":"kept"}`)
	a.st.kill()
	var q approvals.Request
	for deadline := time.Now().Add(20 * lease); ; time.Sleep(100 * time.Millisecond) {
		var err error
		if q, err = b.svc.Get(lost.ID); err != nil {
			t.Fatal(err)
		}
		if q.State != approvals.Pending || time.Now().After(deadline) {
			break
		}
	}
	if q.State != approvals.Abandoned || !strings.Contains(q.Reason, "replica-a") {
		t.Fatalf("a dead replica's request: %+v", q)
	}
	if q := recv(t, b.abandoned, "B's Abandoned event"); q.ID != lost.ID {
		t.Errorf("B marked %+v abandoned", q)
	}
	_, err := b.svc.Decide(lost.ID, ann, true, "", "")
	if !errors.Is(err, approvals.ErrNotPending) || !strings.Contains(err.Error(), "abandoned") || !strings.Contains(err.Error(), "can no longer be answered") {
		t.Fatalf("approving an abandoned request: %v", err)
	}
	if q, err := b.svc.Get(kept.ID); err != nil || q.State != approvals.Pending {
		t.Fatalf("a live replica's request: %+v %v", q, err)
	}
	list, err := b.svc.List()
	if err != nil || len(list) != 2 || list[0].ID != kept.ID || list[1].State != approvals.Abandoned {
		t.Fatalf("B lists %+v %v", list, err)
	}
	// Were A's process still there, its call would end as the store
	// says: never approved.
	cancel()
	if got := recv(t, done, "A's Ask"); got.State != approvals.Abandoned {
		t.Errorf("A's call ended %+v", got)
	}
	recv(t, keptDone, "B's Ask")
	if len(b.abandoned) != 0 {
		t.Errorf("a request marked abandoned more than once")
	}
}

// TestStoreDownFailsClosed: with the store unreachable, a call is not
// parked where nobody can answer it: Ask fails (the host denies the
// call), and listing says why.
func TestStoreDownFailsClosed(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	srv.Stop()
	a := newReplica(t, srv.URL(), "replica-a")
	req, err := a.svc.Ask(context.Background(), oncall(1, time.Minute), approvals.Call{ID: "c1", Tool: "files_delete", Arguments: `{}`, Principal: caller},
		func(approvals.Request) { t.Error("told to wait with the store down") })
	if err == nil || !strings.Contains(err.Error(), "the shared store cannot be reached") || req.State == approvals.Approved {
		t.Fatalf("Ask with the store down: %+v, %v", req, err)
	}
	if _, err := a.svc.List(); err == nil {
		t.Error("List with the store down: no error")
	}
	if _, err := a.svc.Decide("apr-x", ann, true, "", ""); err == nil || errors.Is(err, approvals.ErrNotFound) {
		t.Errorf("Decide with the store down: %v", err)
	}
}
