package sdk

import (
	"context"
	"testing"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// TestForAnyArguments: a guard's or a pre-execute filter's
// Call.ForAnyArguments is sent as any_arguments in the visibility
// question, and only there (outside it the call is ignored); a handler
// that does not call it sends nothing.
func TestForAnyArguments(t *testing.T) {
	var filter string
	h := applyWith(t, harnessOptions{}, "", func(ctx context.Context, p *Context, _ struct{}) error {
		check := func(c *Call) {
			if c.Name != "depends" {
				c.ForAnyArguments()
			}
		}
		if _, err := p.AddGuard(ctx, Guard{Name: "g", Check: func(_ context.Context, c *Call) (string, error) {
			check(c)
			return "", nil
		}}); err != nil {
			return err
		}
		_, err := p.OnPreExecute(ctx, PreExecuteListener{Name: "f", Filter: func(_ context.Context, c *Call) (Decision, error) {
			check(c)
			return Pass(), nil
		}})
		return err
	})
	g := h.rec.last(t, "AddGuard").req.(*pb.AddGuardRequest)
	filter = h.rec.last(t, "Listen").req.(*pb.ListenRequest).GetHandlerId()
	ctx := testCtx(t)
	for _, tc := range []struct {
		tool       string
		visibility bool
		want       bool
	}{
		{"free", true, true},
		{"depends", true, false},
		{"free", false, false}, // not a visibility question: nothing to say
	} {
		x := execution(tc.tool, "{}")
		if tc.visibility {
			x.ArgumentsJson, x.DryRun, x.Visibility = nil, true, true
		}
		gr, err := h.plugin.Guard(ctx, &pb.GuardRequest{HandlerId: g.GetHandlerId(), Execution: x})
		if err != nil || gr.GetAnyArguments() != tc.want {
			t.Errorf("guard, %s, visibility %v: any_arguments %v (%v), want %v", tc.tool, tc.visibility, gr.GetAnyArguments(), err, tc.want)
		}
		pr, err := h.plugin.PreExecute(ctx, &pb.PreExecuteRequest{HandlerId: filter, Execution: x})
		if err != nil || pr.GetAnyArguments() != tc.want || pr.GetDecision().GetVerdict() != pb.Verdict_VERDICT_PASS {
			t.Errorf("filter, %s, visibility %v: %v (%v), want any_arguments %v", tc.tool, tc.visibility, pr, err, tc.want)
		}
	}
}
