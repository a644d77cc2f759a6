package approvals

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/shared/identity"
)

// Store keeps the requests where every replica that shares it sees them
// (package redisstore), so that an approver may answer on any replica the
// call that another holds. The rules are not the store's: every replica
// applies them (answer) inside Update.
type Store interface {
	// Create stores a new pending request.
	Create(ctx context.Context, r Request) error
	// Load returns request id; an error wrapping ErrNotFound when the
	// store has none.
	Load(ctx context.Context, id string) (Request, error)
	// List returns every request the store still keeps.
	List(ctx context.Context) ([]Request, error)
	// Update applies fn to request id and stores what it made of it when
	// it returns true, atomically with respect to every replica's Update
	// (fn may run more than once). It returns the request as stored
	// after.
	Update(ctx context.Context, id string, fn func(*Request) bool) (Request, error)
	// Hold says that holder is alive for ttl; Alive whether it still is;
	// Release that it is gone.
	Hold(ctx context.Context, holder string, ttl time.Duration) error
	Alive(ctx context.Context, holder string) (bool, error)
	Release(ctx context.Context, holder string) error
	// Publish tells every replica's Subscribe that request id ended.
	Publish(ctx context.Context, id string) error
	// Subscribe calls fn with each id published until ctx ends.
	Subscribe(ctx context.Context, fn func(id string)) error
}

// DefaultLease is NewShared's lease when it is given none.
const DefaultLease = 30 * time.Second

// storeTimeout bounds one exchange with the store.
const storeTimeout = 5 * time.Second

// shared is what a Service keeps to share its requests.
type shared struct {
	st     Store
	holder string
	lease  time.Duration
	stop   context.CancelFunc
	wg     sync.WaitGroup
}

// NewShared returns a service whose requests live in st, shared by every
// replica using it. holder names this replica, unique to this process (a
// replica that dies leaves a name nobody renews); lease is how long its
// requests outlive it: a pending request whose holder has not renewed
// its lease within lease is abandoned. Close stops it.
func NewShared(ev Events, st Store, holder string, lease time.Duration) *Service {
	if lease <= 0 {
		lease = DefaultLease
	}
	s := New(ev)
	ctx, stop := context.WithCancel(context.Background())
	s.sh = &shared{st: st, holder: holder, lease: lease, stop: stop}
	s.sh.wg.Add(2)
	go s.renew(ctx)
	go s.listen(ctx)
	return s
}

// Holder is the name of this replica in the store ("" without one).
func (s *Service) Holder() string {
	if s.sh == nil {
		return ""
	}
	return s.sh.holder
}

// Close stops renewing this replica's lease and releases it, so that a
// request it still held (none, once its calls have ended) is abandoned at
// once. Without a store it does nothing.
func (s *Service) Close() {
	if s.sh == nil {
		return
	}
	s.sh.stop()
	s.sh.wg.Wait()
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	_ = s.sh.st.Release(ctx, s.sh.holder)
}

// renew keeps this replica's lease, every third of it, and looks again at
// the calls it holds: an answer whose notice was lost (the subscription
// reconnecting) still reaches its call.
func (s *Service) renew(ctx context.Context) {
	defer s.sh.wg.Done()
	t := time.NewTicker(s.sh.lease / 3)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, storeTimeout)
		_ = s.sh.st.Hold(sctx, s.sh.holder, s.sh.lease)
		cancel()
		s.mu.Lock()
		ids := make([]string, 0, len(s.reqs))
		for id := range s.reqs {
			ids = append(ids, id)
		}
		s.mu.Unlock()
		for _, id := range ids {
			s.wake(ctx, id)
		}
	}
}

// listen wakes the calls this replica holds as their requests end on any
// replica.
func (s *Service) listen(ctx context.Context) {
	defer s.sh.wg.Done()
	for ctx.Err() == nil {
		_ = s.sh.st.Subscribe(ctx, func(id string) { s.wake(ctx, id) })
		select {
		case <-ctx.Done():
		case <-time.After(time.Second): // the store is down: try again
		}
	}
}

// wake ends the call waiting on request id, when this replica holds it
// and the store has it ended.
func (s *Service) wake(ctx context.Context, id string) {
	s.mu.Lock()
	e := s.reqs[id]
	s.mu.Unlock()
	if e == nil {
		return
	}
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	r, err := s.sh.st.Load(sctx, id)
	if err != nil || r.State == Pending {
		return
	}
	s.finish(e, r)
}

// finish ends e's wait with r, the request as the store ended it, once.
func (s *Service) finish(e *entry, r Request) {
	s.mu.Lock()
	if e.ended {
		s.mu.Unlock()
		return
	}
	e.req, e.ended = r, true
	close(e.done)
	s.mu.Unlock()
	if s.ev.Ended != nil {
		s.ev.Ended(r)
	}
}

// create stores a new request after renewing this replica's lease (so
// that no replica finds it abandoned before the first renewal).
func (s *Service) create(r Request) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	if err := s.sh.st.Hold(ctx, s.sh.holder, s.sh.lease); err != nil {
		return fmt.Errorf("approvals: the shared store cannot be reached: %w", err)
	}
	if err := s.sh.st.Create(ctx, r); err != nil {
		return fmt.Errorf("approvals: the shared store cannot be reached: %w", err)
	}
	return nil
}

// forget drops the entry of a call that no longer waits.
func (s *Service) forget(id string) {
	s.mu.Lock()
	delete(s.reqs, id)
	s.mu.Unlock()
}

// endShared moves e's request out of Pending in the store (the timeout,
// the caller giving up), unless a replica ended it first, in which case
// the call ends as that replica decided. A store that cannot be told ends
// the call all the same, never approved.
func (s *Service) endShared(e *entry, state, reason string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	moved := false
	r, err := s.sh.st.Update(ctx, e.req.ID, func(r *Request) bool {
		moved = r.State == Pending
		if moved {
			r.State, r.Reason, r.Decided = state, reason, s.now()
		}
		return moved
	})
	if err != nil {
		s.mu.Lock()
		r = clone(e.req)
		s.mu.Unlock()
		r.State, r.Reason, r.Decided = state, fmt.Sprintf("%s (the shared store was not told: %v)", reason, err), s.now()
	} else if moved {
		_ = s.sh.st.Publish(ctx, r.ID)
	}
	s.finish(e, r)
}

// reap marks r abandoned when it is pending and its holder is gone: its
// call can never resume, so nobody may answer it.
func (s *Service) reap(ctx context.Context, r Request, alive map[string]bool) (Request, error) {
	if r.State != Pending || r.Holder == "" || r.Holder == s.sh.holder {
		return r, nil
	}
	ok, seen := alive[r.Holder]
	if !seen {
		var err error
		if ok, err = s.sh.st.Alive(ctx, r.Holder); err != nil {
			return r, fmt.Errorf("approvals: the shared store: %w", err)
		}
		alive[r.Holder] = ok
	}
	if ok {
		return r, nil
	}
	why := fmt.Sprintf("the replica %s that held the call stopped (its lease in the store ran out), so the call can never resume", r.Holder)
	marked := false
	out, err := s.sh.st.Update(ctx, r.ID, func(q *Request) bool {
		marked = q.State == Pending
		if marked {
			q.State, q.Reason, q.Decided = Abandoned, why, s.now()
		}
		return marked
	})
	if err != nil {
		return r, fmt.Errorf("approvals: the shared store: %w", err)
	}
	if marked && s.ev.Abandoned != nil {
		s.ev.Abandoned(out)
	}
	return out, nil
}

func (s *Service) listShared() ([]Request, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	all, err := s.sh.st.List(ctx)
	if err != nil {
		return nil, fmt.Errorf("approvals: the shared store: %w", err)
	}
	alive := map[string]bool{}
	for i := range all {
		if all[i], err = s.reap(ctx, all[i], alive); err != nil {
			return nil, err
		}
	}
	return all, nil
}

func (s *Service) getShared(id string) (Request, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	r, err := s.sh.st.Load(ctx, id)
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return Request{}, err
		}
		return Request{}, fmt.Errorf("approvals: the shared store: %w", err)
	}
	return s.reap(ctx, r, map[string]bool{})
}

// decideShared is Decide with a store: the same answer, applied to the
// request as the store has it, atomically; the replica holding the call
// is told when the answer ends it.
func (s *Service) decideShared(id string, by identity.Principal, approve bool, reason, argsSHA256 string) (Request, error) {
	if _, err := s.getShared(id); err != nil { // an abandoned request takes no answer
		return Request{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var (
		ended bool
		aerr  error
	)
	r, err := s.sh.st.Update(ctx, id, func(r *Request) bool {
		ended, aerr = false, nil
		if r.State != Pending {
			aerr = notPending(*r)
			return false
		}
		state, why, err := answer(r, by, approve, reason, argsSHA256, s.now())
		aerr = err
		if state != "" {
			r.State, r.Reason, r.Decided, ended = state, why, s.now(), true
		}
		return true
	})
	switch {
	case errors.Is(err, ErrNotFound):
		return Request{}, err
	case err != nil:
		return Request{}, fmt.Errorf("approvals: the shared store: %w", err)
	case aerr != nil:
		if !errors.Is(aerr, ErrNotPending) && s.ev.Refused != nil {
			s.ev.Refused(r, r.Decisions[len(r.Decisions)-1])
		}
		return r, aerr
	}
	if ended {
		// Should the notice be lost, the holder finds the answer at its
		// next renewal.
		_ = s.sh.st.Publish(ctx, id)
	}
	return r, nil
}
