package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/pipeline"
)

// BenchmarkShadowRule is a call with one in-host guard rule, enforced and
// in shadow (ShadowRule naming it), when the rule passes the call (the
// common case: what shadow mode costs every call) and when it objects
// (enforced, the call is denied; in shadow, it runs and the decision is
// noted). Compare shadow with enforced of the same run:
//
//	go test -run - -bench ShadowRule ./pipeline/
func BenchmarkShadowRule(b *testing.B) {
	for _, c := range []struct {
		name   string
		args   string
		shadow bool
	}{
		{"passes/enforced", `{"a":2,"b":3}`, false},
		{"passes/shadow", `{"a":2,"b":3}`, true},
		{"objects/enforced", `{"a":2,"b":4}`, false},
		{"objects/shadow", `{"a":2,"b":4}`, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			k, tools := newTools(b, pipeline.Options{})
			load(b, k,
				fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
				fakePlugin{name: "rules", guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
					pipeline.NoteRule(ctx, "no-fours")
					if strings.Contains(e.ArgumentsJSON(), "4") {
						return "no fours", nil
					}
					return "", nil
				}}.plugin(),
			)
			if c.shadow {
				if err := tools.SetShadow([]pipeline.ShadowRule{{Plugin: "rules", Rule: "no-fours"}}); err != nil {
					b.Fatal(err)
				}
			}
			ctx, args := context.Background(), []byte(c.args)
			wantOK := c.shadow || !strings.Contains(c.args, "4")
			b.ReportAllocs()
			for b.Loop() {
				if r := tools.Execute(ctx, "add", args, "bench"); r.OK != wantOK {
					b.Fatalf("ok = %v, want %v (%+v)", r.OK, wantOK, r.Error)
				}
			}
		})
	}
}
