package pipeline

import "context"

// PreExecuteFunc is a stage-1 listener. Calling next runs the listeners after
// it and the default (Allow); returning without calling it vetoes them. An
// outer listener sees what next returned and may override it.
type PreExecuteFunc func(ctx context.Context, e *Execution, next DecideNext) (Decision, error)

// DecideNext runs the inner part of the stage-1 chain; it may be called again.
type DecideNext func(ctx context.Context) Decision

// GuardFunc is a stage-2 guard: a non-empty reason denies the call, an empty
// one passes. A guard cannot allow.
type GuardFunc func(ctx context.Context, e *Execution) (reason string, err error)

// GuardStart is a guard in two steps: it starts the check (a request sent
// to another process) and returns what waits for the verdict, which the
// pipeline calls exactly once. The pipeline starts every such guard of a
// call before it waits for any, on the caller's goroutine (see
// Registrar.StartedGuard).
type GuardStart func(ctx context.Context, e *Execution) (wait func() (reason string, err error))

// ApproverFunc answers an Ask. Only approved == true with a nil error lets
// the call proceed.
type ApproverFunc func(ctx context.Context, e *Execution, reason string) (approved bool, err error)

// ApprovalDenied is an approver's error that ends the Ask DENIED with its
// own Reason, not as the approver's failure: a route's approvers denied
// it, or nobody approved in time (TimedOut).
type ApprovalDenied struct {
	Reason   string
	TimedOut bool
}

func (d *ApprovalDenied) Error() string { return d.Reason }

// ExecuteFunc is a stage-3 wrapper: it holds the whole call. Calling next
// runs the inner wrappers and the tool; it may be called again (a retry).
type ExecuteFunc func(ctx context.Context, e *Execution, next ExecuteNext) Result

// ExecuteNext runs the inner part of the stage-3 chain.
type ExecuteNext func(ctx context.Context) Result

// PostExecuteFunc is a stage-4 listener: it sees the stage-3 result and
// accepts it, replaces its value or blocks it.
type PostExecuteFunc func(ctx context.Context, e *Execution, r Result, next ReviewNext) (Review, error)

// ReviewNext runs the inner part of the stage-4 chain.
type ReviewNext func(ctx context.Context) Review

// ResultFunc is a stage-5 observer. It cannot change the result; an error or
// panic is logged and contained.
type ResultFunc func(ctx context.Context, e *Execution, r Result) error

// ToolFunc is a tool's body. An *Error chooses the code; any other error is
// a TOOL_ERROR with its message.
type ToolFunc func(ctx context.Context, e *Execution) (any, error)
