package conformance

// This file turns a plugin spec into an in-host kernel.Plugin: one
// pipeline listener per spec, with the behaviours the cases ask for.
// inhost.go is the harness that runs them.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// InHostPlugin turns a spec into an in-host plugin writing to logs.
func InHostPlugin(p PluginSpec, logs *Logs) (kernel.Plugin, error) {
	return buildPlugin(p, logs, nil)
}

// buildPlugin turns a spec into an in-host plugin. When died is not nil,
// every call into the plugin runs as a call into a process would: closing
// died makes calls in flight and later calls fail with errDied.
func buildPlugin(p PluginSpec, logs *Logs, died <-chan struct{}) (kernel.Plugin, error) {
	b := &builder{logs: logs, died: died}
	var tools []pipeline.Tool
	for _, ts := range p.Tools {
		tool, err := b.tool(ts)
		if err != nil {
			return kernel.Plugin{}, err
		}
		tools = append(tools, tool)
	}
	pre := make([]pipeline.PreExecuteFunc, len(p.Pre))
	for i, s := range p.Pre {
		fn, err := b.pre(s)
		if err != nil {
			return kernel.Plugin{}, err
		}
		pre[i] = fn
	}
	guards := make([]pipeline.GuardFunc, len(p.Guards))
	for i, s := range p.Guards {
		fn, err := b.guard(s)
		if err != nil {
			return kernel.Plugin{}, err
		}
		guards[i] = fn
	}
	exec := make([]pipeline.ExecuteFunc, len(p.Exec))
	for i, s := range p.Exec {
		fn, err := b.exec(s)
		if err != nil {
			return kernel.Plugin{}, err
		}
		exec[i] = fn
	}
	post := make([]pipeline.PostExecuteFunc, len(p.Post))
	for i, s := range p.Post {
		fn, err := b.post(s)
		if err != nil {
			return kernel.Plugin{}, err
		}
		post[i] = fn
	}
	observers := make([]pipeline.ResultFunc, len(p.Observers))
	for i, s := range p.Observers {
		fn, err := b.observer(s)
		if err != nil {
			return kernel.Plugin{}, err
		}
		observers[i] = fn
	}
	var approver pipeline.ApproverFunc
	if p.Approver != nil {
		fn, err := b.approver(*p.Approver)
		if err != nil {
			return kernel.Plugin{}, err
		}
		approver = fn
	}

	return kernel.Plugin{
		Name:   p.Name,
		Inject: []string{pipeline.ServiceName},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			var errs []error
			add := func(_ *kernel.Effect, err error) { errs = append(errs, err) }
			for _, tool := range tools {
				add(reg.Register(tool))
			}
			for i, fn := range pre {
				add(reg.OnPreExecute(fn, p.Pre[i].Tools...))
			}
			for i, fn := range guards {
				add(reg.Guard(fn, p.Guards[i].Tools...))
			}
			for i, fn := range exec {
				add(reg.OnExecute(fn, p.Exec[i].Tools...))
			}
			for i, fn := range post {
				add(reg.OnPostExecute(fn, p.Post[i].Tools...))
			}
			for i, fn := range observers {
				add(reg.OnResult(fn, p.Observers[i].Tools...))
			}
			if approver != nil {
				add(reg.SetApprover(approver))
			}
			return errors.Join(errs...)
		},
	}, nil
}

// builder turns specs into listeners.
type builder struct {
	logs *Logs
	died <-chan struct{}
}

// errDied is what a call into a plugin whose simulated process died gets.
var errDied = errors.New("plugin process exited")

// alive runs f as a call into the plugin's process would run: when the
// process dies first, it returns errDied at once and cancels f's context.
// Without a process (died == nil) it just calls f.
func alive[T any](ctx context.Context, died <-chan struct{}, f func(context.Context) (T, error)) (T, error) {
	if died == nil {
		return f(ctx)
	}
	var zero T
	select {
	case <-died:
		return zero, errDied
	default:
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type answer struct {
		v        T
		err      error
		panicked any
	}
	ch := make(chan answer, 1)
	go func() {
		var a answer
		defer func() {
			a.panicked = recover()
			ch <- a
		}()
		a.v, a.err = f(ctx)
	}()
	select {
	case a := <-ch:
		if a.panicked != nil {
			panic(a.panicked) // as the transport would report it
		}
		return a.v, a.err
	case <-died:
		return zero, errDied
	}
}

func (b *builder) tool(s ToolSpec) (pipeline.Tool, error) {
	t := pipeline.Tool{
		ToolDescriptor: wire.ToolDescriptor{
			Name: s.Name, Description: s.Description, Timeout: s.Timeout,
			Idempotent: s.Idempotent, Destructive: s.Destructive,
		},
	}
	if s.Parameters != "" {
		t.Parameters = json.RawMessage(s.Parameters)
	}
	var body func(ctx context.Context, e *pipeline.Execution, run int) (any, error)
	switch s.Body {
	case BodyNone:
		return t, nil
	case BodyAdd:
		body = func(ctx context.Context, e *pipeline.Execution, _ int) (any, error) {
			var in struct{ A, B float64 }
			if err := e.Decode(&in); err != nil {
				return nil, err
			}
			return in.A + in.B, nil
		}
	case BodyEcho:
		body = func(ctx context.Context, e *pipeline.Execution, _ int) (any, error) {
			return e.Arguments(), nil
		}
	case BodySleep:
		body = func(ctx context.Context, e *pipeline.Execution, _ int) (any, error) {
			if s.IgnoreCancel {
				time.Sleep(s.Sleep)
				return "slept", nil
			}
			if err := sleep(ctx, s.Sleep); err != nil {
				return nil, err
			}
			return "slept", nil
		}
	case BodyError:
		body = func(ctx context.Context, e *pipeline.Execution, _ int) (any, error) {
			return nil, errors.New(s.Message)
		}
	case BodyPanic:
		body = func(ctx context.Context, e *pipeline.Execution, _ int) (any, error) {
			panic(s.Message)
		}
	case BodyScript:
		if len(s.Script) == 0 {
			return t, fmt.Errorf("tool %q: script body with no steps", s.Name)
		}
		body = func(ctx context.Context, e *pipeline.Execution, run int) (any, error) {
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
	t.Execute = func(ctx context.Context, e *pipeline.Execution) (any, error) {
		return alive(ctx, b.died, func(ctx context.Context) (any, error) {
			mu.Lock()
			runs++
			run := runs
			mu.Unlock()
			b.logs.Add(s.Log, "run")
			v, err := body(ctx, e, run)
			if ctx.Err() != nil && err != nil {
				b.logs.Add(s.Log, "cancelled")
			} else {
				b.logs.Add(s.Log, "done")
			}
			return v, err
		})
	}
	return t, nil
}

// sleep waits d or until ctx ends, whichever comes first.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (b *builder) pre(s PreSpec) (pipeline.PreExecuteFunc, error) {
	var fn pipeline.PreExecuteFunc
	switch s.Behaviour {
	case PrePass:
		fn = func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			return next(ctx), nil
		}
	case PreAllow:
		fn = func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Allow(), nil
		}
	case PreDenyAll:
		fn = func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Deny(s.Reason), nil
		}
	case PreDenyWhenNegative:
		fn = func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			if n, ok := number(e, s.Field); ok && n < 0 {
				return pipeline.Deny(s.Reason), nil
			}
			return next(ctx), nil
		}
	case PreAsk:
		fn = func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Ask(s.Reason), nil
		}
	case PreOverrideAllow:
		fn = func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			_ = next(ctx)
			return pipeline.Allow(), nil
		}
	case PrePanic:
		fn = func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			panic("pre-execute listener panics")
		}
	case PreError:
		fn = func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Decision{}, errors.New(s.Reason)
		}
	case PreUnknown:
		fn = func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
			return pipeline.Decision{Verdict: 42, Reason: s.Reason}, nil
		}
	case PreHang, PreHangFilter:
		fn = func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			<-ctx.Done()
			return pipeline.Decision{}, ctx.Err()
		}
	default:
		return nil, fmt.Errorf("unknown pre-execute behaviour %q", s.Behaviour)
	}
	return func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
		return alive(ctx, b.died, func(ctx context.Context) (pipeline.Decision, error) {
			if err := sleep(ctx, s.Sleep); err != nil {
				return pipeline.Decision{}, err
			}
			b.logs.Add(s.Log, "called")
			return fn(ctx, e, next)
		})
	}, nil
}

func (b *builder) guard(s GuardSpec) (pipeline.GuardFunc, error) {
	var fn pipeline.GuardFunc
	switch s.Behaviour {
	case GuardSilent:
		fn = func(context.Context, *pipeline.Execution) (string, error) { return "", nil }
	case GuardDenyAll:
		fn = func(context.Context, *pipeline.Execution) (string, error) { return s.Reason, nil }
	case GuardDenyWhenGreater:
		fn = func(ctx context.Context, e *pipeline.Execution) (string, error) {
			if n, ok := number(e, s.Field); ok && n > s.Limit {
				return s.Reason, nil
			}
			return "", nil
		}
	case GuardDenyWhenEqual:
		fn = func(ctx context.Context, e *pipeline.Execution) (string, error) {
			var args map[string]any
			if err := e.Decode(&args); err != nil {
				return "", err
			}
			if v, ok := args[s.Field].(string); ok && v == s.Value {
				return s.Reason, nil
			}
			return "", nil
		}
	case GuardPanic:
		fn = func(context.Context, *pipeline.Execution) (string, error) { panic("guard panics") }
	case GuardError:
		fn = func(context.Context, *pipeline.Execution) (string, error) { return "", errors.New(s.Reason) }
	case GuardHang:
		fn = func(ctx context.Context, e *pipeline.Execution) (string, error) {
			<-ctx.Done()
			return "", ctx.Err()
		}
	default:
		return nil, fmt.Errorf("unknown guard behaviour %q", s.Behaviour)
	}
	return func(ctx context.Context, e *pipeline.Execution) (string, error) {
		return alive(ctx, b.died, func(ctx context.Context) (string, error) {
			if err := sleep(ctx, s.Sleep); err != nil {
				return "", err
			}
			b.logs.Add(s.Log, "called")
			return fn(ctx, e)
		})
	}, nil
}

func (b *builder) exec(s ExecSpec) (pipeline.ExecuteFunc, error) {
	fn, err := b.execFunc(s)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
		r, err := alive(ctx, b.died, func(ctx context.Context) (pipeline.Result, error) {
			return fn(ctx, e, next), nil
		})
		if err != nil {
			return pipeline.Fail(pipeline.CodeToolError, err.Error())
		}
		return r
	}, nil
}

func (b *builder) execFunc(s ExecSpec) (pipeline.ExecuteFunc, error) {
	switch s.Behaviour {
	case ExecRecord:
		return func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
			b.logs.Add(s.Log, "start")
			r := next(ctx)
			b.logs.Add(s.Log, "end "+outcome(r))
			return r
		}, nil
	case ExecShortCircuit:
		if !json.Valid([]byte(s.Value)) {
			return nil, fmt.Errorf("short-circuit value %q is not JSON", s.Value)
		}
		return func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
			b.logs.Add(s.Log, "called")
			return pipeline.OK(json.RawMessage(s.Value))
		}, nil
	case ExecHang, ExecHangFilter:
		return func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
			b.logs.Add(s.Log, "called")
			<-ctx.Done()
			return pipeline.Fail(pipeline.CodeAborted, ctx.Err().Error())
		}, nil
	}
	return nil, fmt.Errorf("unknown execute behaviour %q", s.Behaviour)
}

func (b *builder) post(s PostSpec) (pipeline.PostExecuteFunc, error) {
	var fn pipeline.PostExecuteFunc
	switch s.Behaviour {
	case PostPass, PostWrapPass:
		fn = func(ctx context.Context, e *pipeline.Execution, r pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
			return next(ctx), nil
		}
	case PostHang, PostHangFilter:
		fn = func(ctx context.Context, e *pipeline.Execution, r pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
			<-ctx.Done()
			return pipeline.Review{}, ctx.Err()
		}
	case PostReplace:
		if !json.Valid([]byte(s.Value)) {
			return nil, fmt.Errorf("replacement %q is not JSON", s.Value)
		}
		fn = func(context.Context, *pipeline.Execution, pipeline.Result, pipeline.ReviewNext) (pipeline.Review, error) {
			return pipeline.AcceptReplacing(json.RawMessage(s.Value)), nil
		}
	case PostBlock:
		fn = func(context.Context, *pipeline.Execution, pipeline.Result, pipeline.ReviewNext) (pipeline.Review, error) {
			return pipeline.Block(s.Reason), nil
		}
	case PostError:
		fn = func(context.Context, *pipeline.Execution, pipeline.Result, pipeline.ReviewNext) (pipeline.Review, error) {
			return pipeline.Review{}, errors.New(s.Reason)
		}
	case PostPanic:
		fn = func(context.Context, *pipeline.Execution, pipeline.Result, pipeline.ReviewNext) (pipeline.Review, error) {
			panic("post-execute listener panics")
		}
	default:
		return nil, fmt.Errorf("unknown post-execute behaviour %q", s.Behaviour)
	}
	return func(ctx context.Context, e *pipeline.Execution, r pipeline.Result, next pipeline.ReviewNext) (pipeline.Review, error) {
		return alive(ctx, b.died, func(ctx context.Context) (pipeline.Review, error) {
			if err := sleep(ctx, s.Sleep); err != nil {
				return pipeline.Review{}, err
			}
			b.logs.Add(s.Log, "called")
			return fn(ctx, e, r, next)
		})
	}, nil
}

func (b *builder) observer(s ObserverSpec) (pipeline.ResultFunc, error) {
	switch s.Behaviour {
	case ObserveRecord, ObservePanic, ObserveRecordID:
	default:
		return nil, fmt.Errorf("unknown observer behaviour %q", s.Behaviour)
	}
	return func(ctx context.Context, e *pipeline.Execution, r pipeline.Result) error {
		_, err := alive(ctx, b.died, func(ctx context.Context) (struct{}, error) {
			if s.Sleep > 0 {
				time.Sleep(s.Sleep) // an observer is not cancelled: it records
			}
			line := e.Name() + " " + outcome(r)
			if s.Behaviour == ObserveRecordID {
				line = e.ID() + " " + line
			}
			b.logs.Add(s.Log, line)
			if s.Behaviour == ObservePanic {
				panic("observer panics")
			}
			return struct{}{}, nil
		})
		return err
	}, nil
}

func (b *builder) approver(s ApproverSpec) (pipeline.ApproverFunc, error) {
	var fn pipeline.ApproverFunc
	switch s.Behaviour {
	case ApproveYes:
		fn = func(context.Context, *pipeline.Execution, string) (bool, error) { return true, nil }
	case ApproveNo:
		fn = func(context.Context, *pipeline.Execution, string) (bool, error) { return false, nil }
	case ApproveError:
		fn = func(context.Context, *pipeline.Execution, string) (bool, error) { return false, errors.New(s.Reason) }
	case ApproveHang:
		fn = func(ctx context.Context, e *pipeline.Execution, reason string) (bool, error) {
			<-ctx.Done()
			b.logs.Add(s.Log, "cancelled")
			return true, ctx.Err()
		}
	default:
		return nil, fmt.Errorf("unknown approver behaviour %q", s.Behaviour)
	}
	return func(ctx context.Context, e *pipeline.Execution, reason string) (bool, error) {
		return alive(ctx, b.died, func(ctx context.Context) (bool, error) {
			b.logs.Add(s.Log, "asked "+reason)
			return fn(ctx, e, reason)
		})
	}, nil
}

// number reads the number at field of the call's arguments.
func number(e *pipeline.Execution, field string) (float64, bool) {
	var args map[string]any
	if err := e.Decode(&args); err != nil {
		return 0, false
	}
	n, ok := args[field].(float64)
	return n, ok
}

// outcome is "ok" or the result's code.
func outcome(r pipeline.Result) string {
	if r.OK {
		return "ok"
	}
	return string(r.Code())
}
