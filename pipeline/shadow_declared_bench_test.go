package pipeline_test

import (
	"context"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/pipeline"
)

// BenchmarkShadowDeclared compares a call whose guard objects, with the
// guard enforced, put in shadow by the deployment (SetShadow) and put in
// shadow by its plugin (StartedGuardInShadow), beside a deployment shadow
// rule of another plugin (so the merged set is used): what a rule marked
// mode = "shadow" costs a call against the same rule enforced, in one run.
func BenchmarkShadowDeclared(b *testing.B) {
	for _, mode := range []string{"enforced", "deployment", "declared"} {
		b.Run(mode, func(b *testing.B) {
			k, tools := newTools(b, pipeline.Options{})
			start := func(ctx context.Context, e *pipeline.Execution) func() (string, error) {
				pipeline.NoteRule(ctx, "no-fours")
				if strings.Contains(e.ArgumentsJSON(), "4") {
					return func() (string, error) { return "no fours", nil }
				}
				return func() (string, error) { return "", nil }
			}
			load(b, k,
				fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
				fakePlugin{name: "rules", apply: func(reg *pipeline.Registrar) error {
					if mode == "declared" {
						_, err := reg.StartedGuardInShadow(start, "no-fours", nil)
						return err
					}
					_, err := reg.StartedGuardVisible(start)
					return err
				}}.plugin(),
			)
			var rules []pipeline.ShadowRule
			switch mode {
			case "deployment":
				rules = []pipeline.ShadowRule{{Plugin: "rules", Rule: "no-fours"}}
			case "declared":
				rules = []pipeline.ShadowRule{{Plugin: "other", Rule: "x"}}
			}
			if err := tools.SetShadow(rules); err != nil {
				b.Fatal(err)
			}
			ctx, args := context.Background(), []byte(`{"a":2,"b":4}`)
			wantOK := mode != "enforced"
			b.ReportAllocs()
			for b.Loop() {
				if r := tools.Execute(ctx, "add", args, "bench"); r.OK != wantOK {
					b.Fatalf("ok = %v, want %v (%+v)", r.OK, wantOK, r.Error)
				}
			}
		})
	}
}
