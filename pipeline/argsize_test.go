package pipeline_test

import (
	"context"
	"encoding/json"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
)

// TestMaxArgumentBytes: arguments over their tool's bound are refused
// INVALID_ARGUMENTS naming the limit before any listener or observer is
// handed them; a tool registered with a larger bound takes larger ones.
func TestMaxArgumentBytes(t *testing.T) {
	const limit = 1 << 10
	k, tools := newTools(t, pipeline.Options{MaxArgumentBytes: limit})
	var pre atomic.Int64
	var seen atomic.Int64 // largest arguments an observer saw
	big := tool("big", okBody("ok"))
	big.MaxArgumentBytes = 4 * limit
	load(t, k, fakePlugin{
		name:  "P",
		tools: []pipeline.Tool{tool("small", okBody("ok")), big},
		pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			pre.Add(1)
			return next(ctx), nil
		},
		result: func(_ context.Context, e *pipeline.Execution, _ pipeline.Result) error {
			if n := int64(len(e.ArgumentsJSON())); n > seen.Load() {
				seen.Store(n)
			}
			return nil
		},
	}.plugin())
	if got := tools.MaxArgumentBytes(); got != 4*limit {
		t.Errorf("MaxArgumentBytes() = %d, want the largest bound, %d", got, 4*limit)
	}
	args := func(n int) json.RawMessage {
		return json.RawMessage(`{"s":"` + strings.Repeat("x", n-8) + `"}`)
	}
	for _, tc := range []struct {
		tool string
		n    int
		ok   bool
	}{
		{"small", limit, true},
		{"small", limit + 1, false},
		{"big", 4 * limit, true},
		{"big", 4*limit + 1, false},
		{"missing", limit + 1, false},
	} {
		before := pre.Load()
		r := tools.Execute(testkit.Context(t), tc.tool, args(tc.n), "test")
		if tc.ok {
			if r.Error != nil {
				t.Errorf("%s with %d bytes: %+v, want it served", tc.tool, tc.n, r.Error)
			}
			continue
		}
		if r.Error == nil || r.Error.Code != pipeline.CodeInvalidArguments || !strings.Contains(r.Error.Message, "max_argument_bytes") {
			t.Errorf("%s with %d bytes: %+v, want INVALID_ARGUMENTS naming max_argument_bytes", tc.tool, tc.n, r.Error)
		}
		if pre.Load() != before {
			t.Errorf("%s with %d bytes: a pre-execute listener saw arguments over the bound", tc.tool, tc.n)
		}
		x := tools.Explain(testkit.Context(t), tc.tool, args(tc.n), "test")
		if tc.tool != "missing" && (x.Outcome != pipeline.BadArgs || !strings.Contains(x.Reason, "max_argument_bytes")) {
			t.Errorf("explain %s with %d bytes: %s %q, want it refused naming max_argument_bytes", tc.tool, tc.n, x.Outcome, x.Reason)
		}
	}
	if n := seen.Load(); n > 4*limit {
		t.Errorf("an observer was handed arguments of %d bytes, over every bound", n)
	}
}
