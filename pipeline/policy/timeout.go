package policy

import (
	"context"
	"time"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// Timeout is the timeout policy: a tool that declares a timeout gets
// TOOL_TIMEOUT ("<name> exceeded <d>") when its call runs longer. It cancels
// the call's context and stops waiting, but cannot stop a body that ignores
// its context: a timeout notifies, it does not kill.
func Timeout() kernel.Plugin { return wrapper("timeout", timeout) }

func timeout(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
	d := e.Tool().Timeout
	if d <= 0 {
		return next(ctx)
	}
	tctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	done := make(chan pipeline.Result, 1)
	go func() { done <- next(tctx) }()
	select {
	case r := <-done:
		if tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil && r.Code() == pipeline.CodeAborted {
			return exceeded(e, d)
		}
		return r
	case <-tctx.Done():
		if ctx.Err() != nil {
			return pipeline.Fail(pipeline.CodeAborted, "call cancelled: "+ctx.Err().Error())
		}
		return exceeded(e, d)
	}
}

func exceeded(e *pipeline.Execution, d time.Duration) pipeline.Result {
	return pipeline.Fail(pipeline.CodeToolTimeout, e.Name()+" exceeded "+d.String())
}
