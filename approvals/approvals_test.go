package approvals

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/shared/identity"
)

var (
	caller = identity.Principal{ID: "ci-bot", Kind: "key", Attributes: []string{"group:oncall"}}
	ann    = identity.Principal{ID: "ann", Kind: "user", Attributes: []string{"group:oncall"}}
	bob    = identity.Principal{ID: "bob", Kind: "user", Attributes: []string{"group:oncall"}}
	eve    = identity.Principal{ID: "eve", Kind: "user", Attributes: []string{"group:sales"}}
)

func oncall(quorum int, timeout time.Duration) Route {
	return Route{Name: "oncall", Approvers: []string{"group:oncall"}, Quorum: quorum, Timeout: timeout}
}

// park starts an Ask and returns the pending request and what Ask returns.
func park(t *testing.T, s *Service, ctx context.Context, r Route, args string) (Request, <-chan Request, <-chan error) {
	t.Helper()
	pending := make(chan Request, 1)
	done := make(chan Request, 1)
	errc := make(chan error, 1)
	go func() {
		req, err := s.Ask(ctx, r, Call{ID: "c1", Tool: "files_delete", Arguments: args, Principal: caller, Caller: "mcp#1"}, func(r Request) { pending <- r })
		done <- req
		errc <- err
	}()
	return <-pending, done, errc
}

func TestQuorumOfDistinctApprovers(t *testing.T) {
	s := New(Events{})
	req, done, errc := park(t, s, context.Background(), oncall(2, time.Hour), `{"path":"a"}`)
	if req.State != Pending || req.ArgsSHA256 != Digest(`{"path":"a"}`) {
		t.Fatalf("pending request = %+v", req)
	}
	if _, err := s.Decide(req.ID, ann, true, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(req.ID, ann, true, "", ""); !errors.Is(err, ErrAnswered) {
		t.Fatalf("the same approver twice: err = %v, want ErrAnswered", err)
	}
	if r, _ := s.Get(req.ID); r.State != Pending || r.Approvals() != 1 {
		t.Fatalf("after one distinct approval: %+v", r)
	}
	if _, err := s.Decide(req.ID, bob, true, "", ""); err != nil {
		t.Fatal(err)
	}
	got := <-done
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	if got.State != Approved || got.Reason != "approved by user:ann, user:bob" {
		t.Fatalf("ended %s: %q", got.State, got.Reason)
	}
	if len(got.Decisions) != 3 || got.Decisions[1].Refused == "" {
		t.Fatalf("decisions = %+v, want the refused second answer kept", got.Decisions)
	}
}

func TestSelfApprovalAndOutsidersRefused(t *testing.T) {
	var mu sync.Mutex
	var refused []string
	s := New(Events{Refused: func(_ Request, d Decision) { mu.Lock(); refused = append(refused, d.By); mu.Unlock() }})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, done, _ := park(t, s, ctx, oncall(1, time.Hour), `{}`)
	// The caller matches group:oncall, yet may not approve its own call.
	if _, err := s.Decide(req.ID, caller, true, "", ""); !errors.Is(err, ErrSelf) {
		t.Fatalf("self-approval: err = %v, want ErrSelf", err)
	}
	if _, err := s.Decide(req.ID, eve, true, "", ""); !errors.Is(err, ErrNotApprover) {
		t.Fatalf("outsider: err = %v, want ErrNotApprover", err)
	}
	if _, err := s.Decide(req.ID, identity.Anonymous, true, "", ""); !errors.Is(err, ErrNotApprover) {
		t.Fatalf("anonymous: err = %v, want ErrNotApprover", err)
	}
	if _, err := s.Decide(req.ID, ann, true, "", Digest(`{"path":"other"}`)); !errors.Is(err, ErrStale) {
		t.Fatalf("answer for other arguments: err = %v, want ErrStale", err)
	}
	if r, _ := s.Get(req.ID); r.State != Pending {
		t.Fatalf("refused answers decided the request: %+v", r)
	}
	mu.Lock()
	if strings.Join(refused, ",") != "key:ci-bot,user:eve,anonymous,user:ann" {
		t.Errorf("refused events = %v", refused)
	}
	mu.Unlock()
	cancel()
	if got := <-done; got.State != Withdrawn {
		t.Fatalf("cancelled call: state %s", got.State)
	}
	if _, err := s.Decide(req.ID, ann, true, "", ""); !errors.Is(err, ErrNotPending) {
		t.Fatalf("answer to a withdrawn request: err = %v, want ErrNotPending", err)
	}
}

func TestOneDenyEndsIt(t *testing.T) {
	s := New(Events{})
	req, done, _ := park(t, s, context.Background(), oncall(2, time.Hour), `{}`)
	if _, err := s.Decide(req.ID, ann, true, "", ""); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Decide(req.ID, bob, false, "not during the freeze", ""); err != nil {
		t.Fatal(err)
	}
	if got := <-done; got.State != Denied || got.Reason != "denied by user:bob: not during the freeze" {
		t.Fatalf("ended %s: %q", got.State, got.Reason)
	}
}

func TestTimeoutSaysFromWhom(t *testing.T) {
	var ended []Request
	s := New(Events{Ended: func(r Request) { ended = append(ended, r) }})
	_, done, _ := park(t, s, context.Background(), oncall(1, 10*time.Millisecond), `{}`)
	got := <-done
	if got.State != TimedOut || got.Reason != "no approval within 10ms from group:oncall" {
		t.Fatalf("ended %s: %q", got.State, got.Reason)
	}
	if len(ended) != 1 || ended[0].ID != got.ID {
		t.Fatalf("Ended events = %+v", ended)
	}
	if shortDuration(15*time.Minute) != "15m" || shortDuration(90*time.Minute) != "1h30m" || shortDuration(2*time.Hour) != "2h" {
		t.Errorf("shortDuration: %s %s %s", shortDuration(15*time.Minute), shortDuration(90*time.Minute), shortDuration(2*time.Hour))
	}
}

func TestUnknownRequest(t *testing.T) {
	s := New(Events{})
	if _, err := s.Decide("apr-nope", ann, true, "", ""); !errors.Is(err, ErrNotFound) {
		t.Fatalf("err = %v", err)
	}
}
