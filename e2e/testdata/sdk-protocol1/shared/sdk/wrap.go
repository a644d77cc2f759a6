package sdk

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// The wrapper side of WRAP listeners: next is a nested call back to the host
// (Host.Next with the request's call_token), which runs the rest of the
// host's chain and returns its real answer. It may be called more than once.

func (s *server) next(ctx context.Context, token string) (*pb.NextResponse, error) {
	host, err := s.hostClient()
	if err != nil {
		return nil, err
	}
	if token == "" {
		return nil, errors.New("next: the host sent no call token (the listener was not registered in WRAP mode)")
	}
	resp, err := host.Next(ctx, &pb.NextRequest{CallToken: token})
	if err != nil {
		return nil, fmt.Errorf("next: %w", hostError(ctx, err))
	}
	return resp, nil
}

func (s *server) nextDecision(token string) NextDecision {
	return func(ctx context.Context) (Decision, error) {
		resp, err := s.next(ctx, token)
		if err != nil {
			return Decision{}, err
		}
		if resp.GetPreExecute() == nil {
			return Decision{}, errors.New("next: the host answered without a stage-1 decision")
		}
		return wire.DecisionFromProto(resp.GetPreExecute()), nil
	}
}

func (s *server) nextOutcome(token string) NextOutcome {
	return func(ctx context.Context) (Outcome, error) {
		resp, err := s.next(ctx, token)
		if err != nil {
			return Outcome{}, err
		}
		if resp.GetExecute() == nil {
			return Outcome{}, errors.New("next: the host answered without a stage-3 outcome")
		}
		return wire.OutcomeFromProto(resp.GetExecute()), nil
	}
}

func (s *server) nextReview(token string) NextReview {
	return func(ctx context.Context) (Review, error) {
		resp, err := s.next(ctx, token)
		if err != nil {
			return Review{}, err
		}
		if resp.GetPostExecute() == nil {
			return Review{}, errors.New("next: the host answered without a stage-4 review")
		}
		return wire.ReviewFromProto(resp.GetPostExecute()), nil
	}
}

// wrapResolvingPass runs a wrapper and resolves a Pass answer plugin-side: it
// becomes what next last returned, or next's answer when the wrapper never
// called it. The host therefore never sees Pass from a wrapper.
func wrapResolvingPass[T any](ctx context.Context, next func(context.Context) (T, error),
	wrap func(next func(context.Context) (T, error)) (T, error), isPass func(T) bool) (T, error) {
	var (
		mu     sync.Mutex
		last   T
		called bool
	)
	recording := func(ctx context.Context) (T, error) {
		v, err := next(ctx)
		if err == nil {
			mu.Lock()
			last, called = v, true
			mu.Unlock()
		}
		return v, err
	}
	v, err := wrap(recording)
	if err != nil || !isPass(v) {
		return v, err
	}
	mu.Lock()
	prev, wasCalled := last, called
	mu.Unlock()
	if wasCalled {
		return prev, nil
	}
	return next(ctx)
}

// checkDecision refuses answers the host would have to treat as failures, so
// the author gets a message that says what was wrong.
func checkDecision(d Decision) error {
	switch d.Verdict {
	case wire.VerdictPass, wire.VerdictAllow, wire.VerdictDeny, wire.VerdictAsk:
		return nil
	case wire.VerdictUnspecified:
		return errors.New("pre-execute listener returned no decision (use sdk.Allow, Deny, Ask or Pass)")
	}
	return fmt.Errorf("pre-execute listener returned an unknown verdict %v", d.Verdict)
}

func checkReview(r Review) error {
	switch r.Verdict {
	case wire.ReviewPass, wire.ReviewAccept, wire.ReviewBlock:
		return nil
	case wire.ReviewReplace:
		if !json.Valid(r.Value) {
			return errors.New("post-execute listener replaced the value with invalid JSON")
		}
		return nil
	case wire.ReviewUnspecified:
		return errors.New("post-execute listener returned no review (use sdk.Accept, Replace, Block or PassReview)")
	}
	return fmt.Errorf("post-execute listener returned an unknown verdict %v", r.Verdict)
}

func checkOutcome(o Outcome) error {
	switch {
	case !o.OK && o.Error == nil:
		return errors.New("execute listener returned a failed outcome without an error (use sdk.Success or Failure)")
	case len(o.Value) > 0 && !json.Valid(o.Value):
		return errors.New("execute listener returned a value that is not valid JSON")
	}
	return nil
}
