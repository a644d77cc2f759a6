package approvals

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/shared/identity"
)

// Route is where an Ask goes: who may approve, how many distinct
// approvers it needs, how long the call waits.
type Route struct {
	Name      string
	Approvers []string // principal selectors (identity.Principal.Matches)
	Quorum    int
	Timeout   time.Duration
}

// Who is the route's approvers as a person reads them: "group:oncall",
// "user:alice or user:bob".
func (r Route) Who() string { return strings.Join(r.Approvers, " or ") }

// Call is the parked call a request is bound to.
type Call struct {
	ID        string
	Tool      string
	Arguments string // canonical JSON
	Principal identity.Principal
	// Caller is the client that made the call.
	Caller string
	// Question is what the rule that asked said.
	Question string
}

// The states of a request. Pending is the only one that can change.
const (
	Pending   = "pending"
	Approved  = "approved"
	Denied    = "denied"
	TimedOut  = "timed_out"
	Withdrawn = "withdrawn" // the caller gave up (cancelled the call)
	Abandoned = "abandoned" // the replica that held the call is gone
)

// Decision is one approver's answer, or a refused attempt to answer.
type Decision struct {
	By      string    `json:"by"`
	Approve bool      `json:"approve"`
	Reason  string    `json:"reason,omitempty"`
	At      time.Time `json:"at"`
	// Refused says why the answer did not count (self-approval, not an
	// approver of the route, already answered); empty when it counted.
	Refused string `json:"refused,omitempty"`
}

// Request is a pending or decided approval request.
type Request struct {
	ID         string    `json:"id"`
	CallID     string    `json:"call_id"`
	Tool       string    `json:"tool"`
	Arguments  string    `json:"arguments"`
	ArgsSHA256 string    `json:"args_sha256"`
	Principal  string    `json:"principal"`
	Caller     string    `json:"caller"`
	Question   string    `json:"question"`
	Route      string    `json:"route"`
	Approvers  []string  `json:"approvers"`
	Quorum     int       `json:"quorum"`
	Created    time.Time `json:"created"`
	Expires    time.Time `json:"expires"`
	State      string    `json:"state"`
	// Reason says why a request that is not pending ended so.
	Reason    string     `json:"reason,omitempty"`
	Decided   time.Time  `json:"decided,omitzero"`
	Decisions []Decision `json:"decisions"`
	// Holder is the replica that holds the call, when the requests are
	// shared by several (a store); empty otherwise.
	Holder string `json:"holder,omitempty"`
}

// Approvals counts the distinct approvals that counted.
func (r *Request) Approvals() int {
	n := 0
	for _, d := range r.Decisions {
		if d.Refused == "" && d.Approve {
			n++
		}
	}
	return n
}

// Record is what the call's audit line and receipt carry: the request as
// decided, without its arguments (the line has their hash and, when
// recorded, the arguments themselves).
func (r Request) Record() Request {
	r.Arguments = ""
	r.Question = ""
	return r
}

// Errors of Decide.
var (
	ErrNotFound    = errors.New("no such approval request")
	ErrNotPending  = errors.New("the request is no longer pending")
	ErrSelf        = errors.New("the call's own principal cannot approve or deny it")
	ErrNotApprover = errors.New("not an approver of the request's route")
	ErrAnswered    = errors.New("this principal has already answered the request")
	ErrStale       = errors.New("the request's arguments are not those the answer was given for")
)

// Events are told of requests as they come and go, for metrics and
// webhooks. Each may be nil; none may block for long.
type Events struct {
	Created func(Request)
	// Ended is called once per request, when it leaves Pending.
	Ended func(Request)
	// Refused is called for each answer that did not count.
	Refused func(Request, Decision)
	// Abandoned is called, with a store, on the replica that finds a
	// request whose holder is gone and marks it abandoned (the holder,
	// dead, tells nothing).
	Abandoned func(Request)
}

// Service holds the requests of one host, or, with a store, the calls
// this replica holds of the requests every replica shares (shared.go).
type Service struct {
	ev  Events
	now func() time.Time
	// keep is how long a decided request stays listed.
	keep time.Duration
	// sh is nil without a store.
	sh *shared

	mu sync.Mutex
	// reqs are every request without a store; with one, the calls this
	// replica holds while they wait.
	reqs map[string]*entry
}

type entry struct {
	req  Request
	done chan struct{} // closed when req leaves Pending
	// ended is set when done is closed (with a store, req then holds the
	// request as the store ended it).
	ended bool
}

// New returns an empty service.
func New(ev Events) *Service {
	return &Service{ev: ev, now: time.Now, keep: time.Hour, reqs: map[string]*entry{}}
}

// Digest is the lowercase hex SHA-256 of canonical arguments: what binds a
// request (and an answer given for it) to the call's arguments.
func Digest(args string) string {
	sum := sha256.Sum256([]byte(args))
	return hex.EncodeToString(sum[:])
}

// Ask parks the call until route decides it and returns the request as it
// ended. waiting, when not nil, is told of the request once it is pending
// (the caller is told whom it waits for). ctx ending withdraws the
// request; Ask then returns ctx's error with the withdrawn request.
func (s *Service) Ask(ctx context.Context, route Route, c Call, waiting func(Request)) (Request, error) {
	now := s.now()
	e := &entry{done: make(chan struct{}), req: Request{
		ID: "apr-" + strings.ToLower(rand.Text()[:12]), CallID: c.ID, Tool: c.Tool, Arguments: c.Arguments,
		ArgsSHA256: Digest(c.Arguments), Principal: c.Principal.String(), Caller: c.Caller, Question: c.Question,
		Route: route.Name, Approvers: slices.Clone(route.Approvers), Quorum: max(route.Quorum, 1),
		Created: now, Expires: now.Add(route.Timeout), State: Pending, Decisions: []Decision{},
	}}
	if s.sh != nil {
		e.req.Holder = s.sh.holder
	}
	s.mu.Lock()
	if s.sh == nil {
		s.prune(now)
	}
	// Listed before it is stored: an answer on another replica that
	// follows the store at once finds the call to wake.
	s.reqs[e.req.ID] = e
	created := e.req
	s.mu.Unlock()
	if s.sh != nil {
		defer s.forget(e.req.ID)
		if err := s.create(e.req); err != nil {
			// Nobody could answer a request the other replicas cannot
			// see: the call is denied with the store's error.
			e.req.State, e.req.Reason, e.req.Decided = Withdrawn, err.Error(), s.now()
			return e.req, err
		}
	}
	if s.ev.Created != nil {
		s.ev.Created(created)
	}
	if waiting != nil {
		waiting(created)
	}
	timer := time.NewTimer(route.Timeout)
	defer timer.Stop()
	select {
	case <-e.done:
	case <-timer.C:
		s.end(e, TimedOut, fmt.Sprintf("no approval within %s from %s", shortDuration(route.Timeout), route.Who()))
	case <-ctx.Done():
		s.end(e, Withdrawn, "the caller cancelled the call while it waited for approval")
	}
	s.mu.Lock()
	out := e.req
	s.mu.Unlock()
	if out.State == Withdrawn && ctx.Err() != nil {
		return out, ctx.Err()
	}
	return out, nil
}

// end moves e out of Pending, once.
func (s *Service) end(e *entry, state, reason string) {
	if s.sh != nil {
		s.endShared(e, state, reason)
		return
	}
	s.mu.Lock()
	if e.req.State != Pending {
		s.mu.Unlock()
		return
	}
	e.req.State, e.req.Reason, e.req.Decided = state, reason, s.now()
	close(e.done)
	ended := e.req
	s.mu.Unlock()
	if s.ev.Ended != nil {
		s.ev.Ended(ended)
	}
}

// prune forgets decided requests older than keep. s.mu is held.
func (s *Service) prune(now time.Time) {
	for id, e := range s.reqs {
		if e.req.State != Pending && now.Sub(e.req.Decided) > s.keep {
			delete(s.reqs, id)
		}
	}
}

// List returns the requests, pending ones first, each group oldest first.
// Only a store fails.
func (s *Service) List() ([]Request, error) {
	if s.sh != nil {
		out, err := s.listShared()
		sortRequests(out)
		return out, err
	}
	s.mu.Lock()
	out := make([]Request, 0, len(s.reqs))
	for _, e := range s.reqs {
		out = append(out, clone(e.req))
	}
	s.mu.Unlock()
	sortRequests(out)
	return out, nil
}

func sortRequests(out []Request) {
	sort.Slice(out, func(i, j int) bool {
		if (out[i].State == Pending) != (out[j].State == Pending) {
			return out[i].State == Pending
		}
		return out[i].Created.Before(out[j].Created)
	})
}

// Get returns one request; ErrNotFound when there is none (or, with a
// store, the store's error).
func (s *Service) Get(id string) (Request, error) {
	if s.sh != nil {
		return s.getShared(id)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	e, ok := s.reqs[id]
	if !ok {
		return Request{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	return clone(e.req), nil
}

func clone(r Request) Request {
	r.Decisions = slices.Clone(r.Decisions)
	r.Approvers = slices.Clone(r.Approvers)
	return r
}

// Decide records by's answer to request id. argsSHA256, when not empty,
// is the hash of the arguments the approver was shown: an answer given
// for other arguments is refused. A refused answer (ErrSelf,
// ErrNotApprover, ErrAnswered) is kept on the request, marked refused,
// so that the record shows the attempt. The request returned is as it is
// after the answer.
func (s *Service) Decide(id string, by identity.Principal, approve bool, reason, argsSHA256 string) (Request, error) {
	if s.sh != nil {
		return s.decideShared(id, by, approve, reason, argsSHA256)
	}
	s.mu.Lock()
	e, ok := s.reqs[id]
	if !ok {
		s.mu.Unlock()
		return Request{}, fmt.Errorf("%w: %s", ErrNotFound, id)
	}
	if e.req.State != Pending {
		r := clone(e.req)
		s.mu.Unlock()
		return r, notPending(r)
	}
	state, why, err := answer(&e.req, by, approve, reason, argsSHA256, s.now())
	snapshot := clone(e.req)
	s.mu.Unlock()
	if err != nil {
		if s.ev.Refused != nil {
			s.ev.Refused(snapshot, snapshot.Decisions[len(snapshot.Decisions)-1])
		}
		return snapshot, err
	}
	if state != "" {
		s.end(e, state, why)
	}
	return s.Get(id)
}

// notPending is the error of an answer to r, which has ended.
func notPending(r Request) error {
	if r.State == Abandoned {
		return fmt.Errorf("%w: %s is %s: %s; it can no longer be answered", ErrNotPending, r.ID, r.State, r.Reason)
	}
	return fmt.Errorf("%w: %s is %s", ErrNotPending, r.ID, r.State)
}

// answer records by's answer on r, a pending request, by the rules every
// replica applies alike: the separation of duties, the route's approvers,
// the binding to the arguments, a quorum of distinct principals, one Deny
// ending it. An answer that does not count is kept, marked refused, and
// err says why. state is what the answer ends r in ("" while it waits on),
// why the reason; the caller moves r there.
func answer(r *Request, by identity.Principal, approve bool, reason, argsSHA256 string, now time.Time) (state, why string, err error) {
	d := Decision{By: by.String(), Approve: approve, Reason: reason, At: now}
	switch {
	case by.ID == "" && by.Kind == "":
		err = fmt.Errorf("%w: an anonymous principal cannot answer", ErrNotApprover)
	case by.String() == r.Principal:
		err = fmt.Errorf("%w: %s made the call %s", ErrSelf, d.By, r.CallID)
	case !slices.ContainsFunc(r.Approvers, by.Matches):
		err = fmt.Errorf("%w: %s is not %s", ErrNotApprover, d.By, strings.Join(r.Approvers, " or "))
	case argsSHA256 != "" && argsSHA256 != r.ArgsSHA256:
		err = fmt.Errorf("%w: answered for arguments %s, the call's are %s", ErrStale, short(argsSHA256), short(r.ArgsSHA256))
	case slices.ContainsFunc(r.Decisions, func(o Decision) bool { return o.Refused == "" && o.By == d.By }):
		err = fmt.Errorf("%w: %s (quorum needs %d distinct approvers)", ErrAnswered, d.By, r.Quorum)
	}
	if err != nil {
		d.Refused = err.Error()
	}
	r.Decisions = append(r.Decisions, d)
	switch {
	case err != nil:
	case !approve:
		state, why = Denied, "denied by "+d.By
		if reason != "" {
			why += ": " + reason
		}
	case r.Approvals() >= r.Quorum:
		var names []string
		for _, o := range r.Decisions {
			if o.Refused == "" && o.Approve {
				names = append(names, o.By)
			}
		}
		state, why = Approved, "approved by "+strings.Join(names, ", ")
	}
	return state, why, err
}

func short(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// shortDuration writes d as people say it: "15m", "1h30m", "45s".
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
