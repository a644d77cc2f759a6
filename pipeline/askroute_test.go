package pipeline_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
)

// The route an Ask names reaches the approver (Execution.AskRoute), the
// per-route timeout (Options.ApprovalTimeoutFor), and Explain.
func TestAskNamesRoute(t *testing.T) {
	asker := fakePlugin{name: "asker", pre: func(_ context.Context, e *pipeline.Execution, _ pipeline.DecideNext) (pipeline.Decision, error) {
		d := pipeline.Ask("sure?")
		if e.Name() == "routed" {
			d.Route = "oncall"
		}
		return d, nil
	}}
	var mu sync.Mutex
	var seen, timed []string
	approver := func(_ context.Context, e *pipeline.Execution, _ string) (bool, error) {
		mu.Lock()
		seen = append(seen, e.Name()+"="+e.AskRoute())
		mu.Unlock()
		return true, nil
	}
	opts := pipeline.Options{ApprovalTimeout: time.Minute, ApprovalTimeoutFor: func(tool, route string) time.Duration {
		mu.Lock()
		timed = append(timed, tool+"="+route)
		mu.Unlock()
		return 0
	}}
	k, tools := newTools(t, opts)
	load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{tool("routed", okBody(1)), tool("plain", okBody(1))}}.plugin(), asker.plugin(),
		fakePlugin{name: "A", approver: approver}.plugin())
	for _, name := range []string{"routed", "plain"} {
		if r := tools.Execute(testkit.Context(t), name, nil, "client"); !r.OK {
			t.Fatalf("%s: %+v", name, r)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	want := []string{"routed=oncall", "plain="}
	for i := range want {
		if i >= len(seen) || seen[i] != want[i] || i >= len(timed) || timed[i] != want[i] {
			t.Fatalf("approver saw %q, timeouts asked for %q; want %q", seen, timed, want)
		}
	}
	if x := tools.Explain(testkit.Context(t), "routed", nil, "client"); x.Outcome != pipeline.WouldAsk || x.Route != "oncall" {
		t.Errorf("explain: outcome %s route %q", x.Outcome, x.Route)
	}
	if x := tools.Explain(testkit.Context(t), "plain", nil, "client"); x.Outcome != pipeline.WouldAsk || x.Route != "" {
		t.Errorf("explain plain: outcome %s route %q", x.Outcome, x.Route)
	}
}
