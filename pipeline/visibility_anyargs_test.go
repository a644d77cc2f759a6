package pipeline_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// TestVisibilityAnyArguments: the three answers a listener gives the
// visibility question, through the stage code. A Deny is for any
// arguments; an Allow, Ask or pass noted with NoteAnyArguments is too,
// and the tool's outcome is then exact (ALLOWED or ASK, with the Ask's
// rule); an answer not noted depends on the arguments, and names the
// listener (and the rule its guard named).
func TestVisibilityAnyArguments(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	var names []pipeline.Tool
	for _, n := range []string{"free", "asked", "denied", "argdep", "guarddep", "allowed"} {
		names = append(names, tool(n, okBody(1)))
	}
	load(t, k,
		fakePlugin{name: "toolbox", tools: names}.plugin(),
		kernel.Plugin{Name: "policy", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			if _, err := reg.OnPreExecuteVisible(func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				switch e.Name() {
				case "asked":
					pipeline.NoteAnyArguments(ctx)
					d := pipeline.Ask("asked always")
					d.Rule = "ask-rule"
					return d, nil
				case "denied":
					return pipeline.Deny("never"), nil
				case "argdep":
					// Some arguments are denied: it passes, without the note.
					return next(ctx), nil
				case "allowed":
					pipeline.NoteAnyArguments(ctx)
					return pipeline.Allow(), nil
				}
				pipeline.NoteAnyArguments(ctx)
				return next(ctx), nil
			}); err != nil {
				return err
			}
			_, err = reg.GuardVisible(func(ctx context.Context, e *pipeline.Execution) (string, error) {
				pipeline.NoteRule(ctx, "paths")
				if e.Name() != "guarddep" {
					pipeline.NoteAnyArguments(ctx)
				}
				return "", nil
			})
			return err
		}},
	)
	ctx := testkit.Context(t)
	got := map[string]string{}
	for _, n := range []string{"free", "asked", "denied", "argdep", "guarddep", "allowed", "nope"} {
		v := tools.Visible(ctx, n)
		got[n] = fmt.Sprintf("shown=%v exact=%v %s %s %q %v", v.Shown, v.Exact, v.Outcome, v.DecidedBy, v.Rule, v.DependsOnArguments)
	}
	want := map[string]string{
		"free":     `shown=true exact=true ALLOWED  "" []`,
		"asked":    `shown=true exact=true ASK policy "ask-rule" []`,
		"denied":   `shown=false exact=true  policy "" []`,
		"argdep":   `shown=true exact=false   "" [policy]`,
		"guarddep": `shown=true exact=false   "" [policy rule "paths"]`,
		"allowed":  `shown=true exact=true ALLOWED  "" []`,
		"nope":     `shown=false exact=true  host "" []`,
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: got %s, want %s", n, got[n], w)
		}
	}
	// The step says which listener noted it.
	v := tools.Visible(ctx, "argdep")
	if i := slices.IndexFunc(v.Steps, func(st pipeline.Step) bool { return st.Stage == 2 }); i < 0 || !v.Steps[i].AnyArguments || v.Steps[0].AnyArguments {
		t.Errorf("argdep steps %+v: want the guard noted, the listener not", v.Steps)
	}
}
