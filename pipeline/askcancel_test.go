package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
)

// An approver that gives up because the call was cancelled (it returns the
// context's error) ends the call ABORTED, never DENIED as a failed
// approver. Here the approver itself cancels the call and returns at once,
// so that its answer and the cancellation arrive together. Which one the
// stage sees first depends on scheduling, and the order that used to give
// DENIED is rare in this small test (the MCP server's stateless tests,
// where the approver is a client's question, met it about once in 30
// runs); it is run many rounds for that reason.
func TestAskCancelledApproverFails(t *testing.T) {
	asker := fakePlugin{name: "asker", pre: func(context.Context, *pipeline.Execution, pipeline.DecideNext) (pipeline.Decision, error) {
		return pipeline.Ask("sure?"), nil
	}}
	var mu sync.Mutex
	var cancelCall context.CancelFunc
	approver := func(ctx context.Context, e *pipeline.Execution, q string) (bool, error) {
		mu.Lock()
		cancelCall()
		mu.Unlock()
		return false, ctx.Err()
	}
	k, tools := newTools(t, pipeline.Options{ApprovalTimeout: time.Minute})
	load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{tool("t", okBody(1))}}.plugin(), asker.plugin(),
		fakePlugin{name: "A", approver: approver}.plugin())
	for range 200 {
		ctx, cancel := context.WithCancel(testkit.Context(t))
		mu.Lock()
		cancelCall = cancel
		mu.Unlock()
		r := tools.Execute(ctx, "t", nil, "client")
		cancel()
		wantCode(t, r, pipeline.CodeAborted)
		if t.Failed() {
			t.Fatalf("result %+v", r)
		}
	}
}
