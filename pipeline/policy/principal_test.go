package policy_test

import (
	"context"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/pipeline/policy"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// TestPerPrincipalConcurrency: a principal at its limit is DENIED at once,
// saying it was rate-limited; another principal is not held up by it.
func TestPerPrincipalConcurrency(t *testing.T) {
	ctx := testkit.Context(t)
	started, release := make(chan struct{}), make(chan struct{})
	tools := host(t, policy.PerPrincipal(policy.PerPrincipalConfig{Concurrency: 1}), toolPlugin{name: "P", tools: []pipeline.Tool{
		{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "hold", Description: "d",
			},
			Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
				started <- struct{}{}
				<-release
				return "done", nil
			},
		},
		{ToolDescriptor: wire.ToolDescriptor{Name: "quick", Description: "d"}, Execute: func(context.Context, *pipeline.Execution) (any, error) { return "ok", nil }},
	}}.plugin())
	ann := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "ann", Kind: "user"})
	bob := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "bob", Kind: "user"})
	first := make(chan pipeline.Result, 1)
	go func() { first <- call(ann, tools, "hold") }()
	recv(t, ctx, started)

	r := call(ann, tools, "quick")
	if r.Code() != pipeline.CodeDenied || r.DecidedBy != policy.LimitsName || !strings.Contains(r.Error.Message, "rate-limited: user:ann already has 1 calls running") {
		t.Errorf("ann's second call: %+v %v", r, r.Error)
	}
	if r := call(bob, tools, "quick"); !r.OK {
		t.Errorf("bob's call while ann is at her limit: %v", r.Error)
	}
	close(release)
	if r := recv(t, ctx, first); !r.OK {
		t.Errorf("ann's first call: %v", r.Error)
	}
	if r := call(ann, tools, "quick"); !r.OK {
		t.Errorf("ann's call once her first ended: %v", r.Error)
	}
}

// TestPerPrincipalRate: past its burst, a principal's calls are DENIED
// until its budget refills; calls made for nobody share one budget.
func TestPerPrincipalRate(t *testing.T) {
	ctx := testkit.Context(t)
	tools := host(t, policy.PerPrincipal(policy.PerPrincipalConfig{Rate: 0.001, Burst: 2}), toolPlugin{name: "P", tools: []pipeline.Tool{
		{ToolDescriptor: wire.ToolDescriptor{Name: "quick", Description: "d"}, Execute: func(context.Context, *pipeline.Execution) (any, error) { return "ok", nil }},
	}}.plugin())
	ann := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "ann", Kind: "user"})
	var codes []pipeline.Code
	for range 3 {
		codes = append(codes, call(ann, tools, "quick").Code())
	}
	codes = append(codes, call(ctx, tools, "quick").Code(), call(ctx, tools, "quick").Code(), call(ctx, tools, "quick").Code())
	want := []pipeline.Code{"", "", pipeline.CodeDenied, "", "", pipeline.CodeDenied}
	for i := range want {
		if codes[i] != want[i] {
			t.Errorf("codes %v, want %v", codes, want)
			break
		}
	}
	if r := call(ann, tools, "quick"); !strings.Contains(r.Error.Message, "rate-limited: user:ann is over 0.001 calls a second") {
		t.Errorf("message: %q", r.Error.Message)
	}
}
