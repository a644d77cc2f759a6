package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/shared/sdk"
)

func (b *builder) tool(s conformance.ToolSpec) (sdk.Tool, error) {
	t := sdk.Tool{
		Name: s.Name, Description: s.Description, Parameters: s.Parameters,
		Timeout: s.Timeout, Idempotent: s.Idempotent, Destructive: s.Destructive,
	}
	var body func(ctx context.Context, c *sdk.Call, run int) (any, error)
	switch s.Body {
	case conformance.BodyNone:
		return t, nil
	case conformance.BodyAdd:
		body = func(ctx context.Context, c *sdk.Call, _ int) (any, error) {
			var in struct{ A, B float64 }
			if err := c.Bind(&in); err != nil {
				return nil, err
			}
			return in.A + in.B, nil
		}
	case conformance.BodyEcho:
		body = func(ctx context.Context, c *sdk.Call, _ int) (any, error) { return c.Arguments, nil }
	case conformance.BodyDescriptor:
		body = func(ctx context.Context, c *sdk.Call, _ int) (any, error) {
			return map[string]any{"name": c.Tool.Name, "description": c.Tool.Description, "parameters": c.Tool.Parameters}, nil
		}
	case conformance.BodySleep:
		body = func(ctx context.Context, c *sdk.Call, _ int) (any, error) {
			if s.IgnoreCancel {
				time.Sleep(s.Sleep)
				return "slept", nil
			}
			if err := sleep(ctx, s.Sleep); err != nil {
				return nil, err
			}
			return "slept", nil
		}
	case conformance.BodyError:
		body = func(context.Context, *sdk.Call, int) (any, error) { return nil, errors.New(s.Message) }
	case conformance.BodyPanic:
		body = func(context.Context, *sdk.Call, int) (any, error) { panic(s.Message) }
	case conformance.BodyScript:
		if len(s.Script) == 0 {
			return t, fmt.Errorf("tool %q: script body with no steps", s.Name)
		}
		body = func(ctx context.Context, c *sdk.Call, run int) (any, error) {
			step := s.Script[min(run, len(s.Script))-1]
			if err := sleep(ctx, step.Sleep); err != nil {
				return nil, err
			}
			if step.Error != "" {
				return nil, errors.New(step.Error)
			}
			return fmt.Sprintf("attempt %d", run), nil
		}
	default:
		return t, fmt.Errorf("tool %q: unknown body %q", s.Name, s.Body)
	}
	var mu sync.Mutex
	runs := 0
	t.Execute = func(ctx context.Context, c *sdk.Call) (any, error) {
		mu.Lock()
		runs++
		run := runs
		mu.Unlock()
		b.logs.add(s.Log, "run")
		v, err := body(ctx, c, run)
		if ctx.Err() != nil && err != nil {
			b.logs.add(s.Log, "cancelled")
		} else {
			b.logs.add(s.Log, "done")
		}
		return v, err
	}
	return t, nil
}

func (b *builder) pre(s conformance.PreSpec) (sdk.PreExecuteListener, error) {
	l := sdk.PreExecuteListener{Tools: s.Tools}
	logged := func(fn func(ctx context.Context, c *sdk.Call, next sdk.NextDecision) (sdk.Decision, error)) func(ctx context.Context, c *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
		return func(ctx context.Context, c *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
			if err := sleep(ctx, s.Sleep); err != nil {
				return sdk.Decision{}, err
			}
			b.logs.add(s.Log, "called")
			return fn(ctx, c, next)
		}
	}
	switch s.Behaviour {
	case conformance.PrePass:
		// A filter that passes costs one RPC; the host continues the chain.
		l.Filter = func(ctx context.Context, c *sdk.Call) (sdk.Decision, error) {
			if err := sleep(ctx, s.Sleep); err != nil {
				return sdk.Decision{}, err
			}
			b.logs.add(s.Log, "called")
			return sdk.Pass(), nil
		}
		return l, nil
	case conformance.PreAllow:
		l.Wrap = logged(func(context.Context, *sdk.Call, sdk.NextDecision) (sdk.Decision, error) { return sdk.Allow(), nil })
	case conformance.PreDenyAll:
		l.Wrap = logged(func(context.Context, *sdk.Call, sdk.NextDecision) (sdk.Decision, error) {
			return sdk.Deny(s.Reason), nil
		})
	case conformance.PreDenyWhenNegative:
		l.Wrap = logged(func(ctx context.Context, c *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
			if n, ok := number(c, s.Field); ok && n < 0 {
				return sdk.Deny(s.Reason), nil
			}
			return next(ctx)
		})
	case conformance.PreAsk:
		l.Wrap = logged(func(context.Context, *sdk.Call, sdk.NextDecision) (sdk.Decision, error) {
			return sdk.Ask(s.Reason), nil
		})
	case conformance.PreOverrideAllow:
		l.Wrap = logged(func(ctx context.Context, c *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
			_, _ = next(ctx)
			return sdk.Allow(), nil
		})
	case conformance.PrePanic:
		l.Wrap = logged(func(context.Context, *sdk.Call, sdk.NextDecision) (sdk.Decision, error) {
			panic("pre-execute listener panics")
		})
	case conformance.PreError:
		l.Wrap = logged(func(context.Context, *sdk.Call, sdk.NextDecision) (sdk.Decision, error) {
			return sdk.Decision{}, errors.New(s.Reason)
		})
	case conformance.PreUnknown:
		l.Wrap = logged(func(context.Context, *sdk.Call, sdk.NextDecision) (sdk.Decision, error) {
			return sdk.Decision{Verdict: 42, Reason: s.Reason}, nil
		})
	case conformance.PreHang:
		l.Wrap = logged(func(ctx context.Context, c *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
			<-ctx.Done()
			return sdk.Decision{}, ctx.Err()
		})
	case conformance.PreHangFilter:
		l.Filter = func(ctx context.Context, c *sdk.Call) (sdk.Decision, error) {
			b.logs.add(s.Log, "called")
			<-ctx.Done()
			return sdk.Decision{}, ctx.Err()
		}
	case conformance.PreHangFirstWrapper:
		l.Wrap = func(ctx context.Context, c *sdk.Call, next sdk.NextDecision) (sdk.Decision, error) {
			earlier := b.logs.lines(s.Log)
			b.logs.add(s.Log, "called")
			if earlier > 0 {
				return next(ctx)
			}
			<-ctx.Done()
			return sdk.Decision{}, ctx.Err()
		}
	case conformance.PreHangFirstFilter:
		l.Filter = func(ctx context.Context, c *sdk.Call) (sdk.Decision, error) {
			earlier := b.logs.lines(s.Log)
			b.logs.add(s.Log, "called")
			if earlier > 0 {
				return sdk.Pass(), nil
			}
			<-ctx.Done()
			return sdk.Decision{}, ctx.Err()
		}
	default:
		return l, fmt.Errorf("unknown pre-execute behaviour %q", s.Behaviour)
	}
	return l, nil
}

func (b *builder) guard(s conformance.GuardSpec) (sdk.Guard, error) {
	var fn func(ctx context.Context, c *sdk.Call) (string, error)
	switch s.Behaviour {
	case conformance.GuardSilent:
		fn = func(context.Context, *sdk.Call) (string, error) { return "", nil }
	case conformance.GuardDenyAll:
		fn = func(context.Context, *sdk.Call) (string, error) { return s.Reason, nil }
	case conformance.GuardDenyWhenGreater:
		fn = func(ctx context.Context, c *sdk.Call) (string, error) {
			if n, ok := number(c, s.Field); ok && n > s.Limit {
				return s.Reason, nil
			}
			return "", nil
		}
	case conformance.GuardDenyWhenEqual:
		fn = func(ctx context.Context, c *sdk.Call) (string, error) {
			var args map[string]any
			if err := json.Unmarshal(c.Arguments, &args); err != nil {
				return "", err
			}
			if v, ok := args[s.Field].(string); ok && v == s.Value {
				return s.Reason, nil
			}
			return "", nil
		}
	case conformance.GuardPanic:
		fn = func(context.Context, *sdk.Call) (string, error) { panic("guard panics") }
	case conformance.GuardError:
		fn = func(context.Context, *sdk.Call) (string, error) { return "", errors.New(s.Reason) }
	case conformance.GuardHang:
		fn = func(ctx context.Context, c *sdk.Call) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}
	case conformance.GuardHangFirst:
		fn = func(ctx context.Context, c *sdk.Call) (string, error) {
			if b.logs.lines(s.Log) > 1 { // "called" is logged before fn
				return "", nil
			}
			<-ctx.Done()
			return "", ctx.Err()
		}
	default:
		return sdk.Guard{}, fmt.Errorf("unknown guard behaviour %q", s.Behaviour)
	}
	return sdk.Guard{Tools: s.Tools, Check: func(ctx context.Context, c *sdk.Call) (string, error) {
		if err := sleep(ctx, s.Sleep); err != nil {
			return "", err
		}
		b.logs.add(s.Log, "called")
		return fn(ctx, c)
	}}, nil
}

func (b *builder) exec(s conformance.ExecSpec) (sdk.ExecuteListener, error) {
	l := sdk.ExecuteListener{Tools: s.Tools}
	switch s.Behaviour {
	case conformance.ExecRecord:
		l.Wrap = func(ctx context.Context, c *sdk.Call, next sdk.NextOutcome) (sdk.Outcome, error) {
			b.logs.add(s.Log, "start")
			o, err := next(ctx)
			if err != nil {
				return o, err
			}
			code := ""
			if o.Error != nil {
				code = string(o.Error.Code)
			}
			b.logs.add(s.Log, "end "+outcome(o.OK, code))
			return o, nil
		}
	case conformance.ExecShortCircuit:
		if !json.Valid([]byte(s.Value)) {
			return l, fmt.Errorf("short-circuit value %q is not JSON", s.Value)
		}
		l.Filter = func(ctx context.Context, c *sdk.Call) (*sdk.Outcome, error) {
			b.logs.add(s.Log, "called")
			o := sdk.Outcome{OK: true, Value: json.RawMessage(s.Value)}
			return &o, nil
		}
	case conformance.ExecHang:
		l.Wrap = func(ctx context.Context, c *sdk.Call, next sdk.NextOutcome) (sdk.Outcome, error) {
			b.logs.add(s.Log, "called")
			<-ctx.Done()
			return sdk.Outcome{}, ctx.Err()
		}
	case conformance.ExecHangFilter:
		l.Filter = func(ctx context.Context, c *sdk.Call) (*sdk.Outcome, error) {
			b.logs.add(s.Log, "called")
			<-ctx.Done()
			return nil, ctx.Err()
		}
	default:
		return l, fmt.Errorf("unknown execute behaviour %q", s.Behaviour)
	}
	return l, nil
}

func (b *builder) post(s conformance.PostSpec) (sdk.PostExecuteListener, error) {
	l := sdk.PostExecuteListener{Tools: s.Tools}
	filter := func(fn func() (sdk.Review, error)) {
		l.Filter = func(ctx context.Context, c *sdk.Call, out sdk.Outcome) (sdk.Review, error) {
			if err := sleep(ctx, s.Sleep); err != nil {
				return sdk.Review{}, err
			}
			b.logs.add(s.Log, "called")
			return fn()
		}
	}
	switch s.Behaviour {
	case conformance.PostPass:
		filter(func() (sdk.Review, error) { return sdk.PassReview(), nil })
	case conformance.PostReplace:
		if !json.Valid([]byte(s.Value)) {
			return l, fmt.Errorf("replacement %q is not JSON", s.Value)
		}
		filter(func() (sdk.Review, error) { return sdk.Replace(json.RawMessage(s.Value)), nil })
	case conformance.PostBlock:
		filter(func() (sdk.Review, error) { return sdk.Block(s.Reason), nil })
	case conformance.PostError:
		filter(func() (sdk.Review, error) { return sdk.Review{}, errors.New(s.Reason) })
	case conformance.PostPanic:
		filter(func() (sdk.Review, error) { panic("post-execute listener panics") })
	case conformance.PostWrapPass:
		l.Wrap = func(ctx context.Context, c *sdk.Call, out sdk.Outcome, next sdk.NextReview) (sdk.Review, error) {
			if err := sleep(ctx, s.Sleep); err != nil {
				return sdk.Review{}, err
			}
			b.logs.add(s.Log, "called")
			return next(ctx)
		}
	case conformance.PostHang:
		l.Wrap = func(ctx context.Context, c *sdk.Call, out sdk.Outcome, next sdk.NextReview) (sdk.Review, error) {
			b.logs.add(s.Log, "called")
			<-ctx.Done()
			return sdk.Review{}, ctx.Err()
		}
	case conformance.PostHangFilter:
		l.Filter = func(ctx context.Context, c *sdk.Call, out sdk.Outcome) (sdk.Review, error) {
			b.logs.add(s.Log, "called")
			<-ctx.Done()
			return sdk.Review{}, ctx.Err()
		}
	default:
		return l, fmt.Errorf("unknown post-execute behaviour %q", s.Behaviour)
	}
	return l, nil
}

func (b *builder) observer(s conformance.ObserverSpec) sdk.ResultListener {
	return sdk.ResultListener{Tools: s.Tools, Observe: func(ctx context.Context, c *sdk.Call, r sdk.ToolResult) {
		if s.Sleep > 0 {
			time.Sleep(s.Sleep) // an observer is not cancelled: it records
		}
		if s.CrashOn != "" && c.Name == s.CrashOn {
			crash("observer: the result of " + c.Name + " ends this process")
		}
		code := ""
		if r.Error != nil {
			code = string(r.Error.Code)
		}
		line := c.Name + " " + outcome(r.OK, code)
		if s.Behaviour == conformance.ObserveRecordID {
			line = c.ID + " " + line
		}
		b.logs.add(s.Log, line)
		if s.Behaviour == conformance.ObservePanic {
			panic("observer panics")
		}
	}}
}

func (b *builder) approver(s conformance.ApproverSpec) (sdk.Approver, error) {
	var fn func(ctx context.Context) (sdk.Approval, error)
	switch s.Behaviour {
	case conformance.ApproveYes:
		fn = func(context.Context) (sdk.Approval, error) { return sdk.Approve(), nil }
	case conformance.ApproveNo:
		fn = func(context.Context) (sdk.Approval, error) { return sdk.Reject(s.Reason), nil }
	case conformance.ApproveError:
		fn = func(context.Context) (sdk.Approval, error) { return sdk.Approval{}, errors.New(s.Reason) }
	case conformance.ApproveHang:
		fn = func(ctx context.Context) (sdk.Approval, error) {
			<-ctx.Done()
			b.logs.add(s.Log, "cancelled")
			return sdk.Approve(), ctx.Err()
		}
	default:
		return sdk.Approver{}, fmt.Errorf("unknown approver behaviour %q", s.Behaviour)
	}
	return sdk.Approver{Approve: func(ctx context.Context, c *sdk.Call, question string) (sdk.Approval, error) {
		b.logs.add(s.Log, "asked "+question)
		return fn(ctx)
	}}, nil
}
