package main

import (
	"context"
	"strings"

	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/pipeline"
)

// withoutArguments judges a recorded call whose line has no arguments
// (the audit's record_arguments is off), for principal p, by the
// visibility question: stages 0 to 2 as a dry run without arguments, the
// code a call runs, each listener answering for every call of the tool by
// p at once. A denial is such an answer (a rule on the tool alone, or on
// the principal's group, or no such tool), and so is an allow or ask when
// every listener on the tool's way said its answer holds for any
// arguments (pipeline.NoteAnyArguments): either judges the call. Otherwise
// which calls run depends on the arguments: why says so, naming the
// listeners (and rules) whose answer does, and the call is not judged.
// was is the recorded outcome.
func withoutArguments(ctx context.Context, h *host.Host, p pipeline.Principal, tool, was string) (x pipeline.Explanation, why string) {
	const unrecorded = "arguments not recorded (the audit's record_arguments is off)"
	if was == pipeline.BadArgs {
		// Stage 0 refused the arguments themselves.
		return x, unrecorded + ", and the call was refused for them (" + was + ")"
	}
	v := h.Pipeline().Visible(pipeline.WithPrincipal(ctx, p), tool)
	if !v.Exact {
		why = unrecorded + ", and under the candidate whether a call of " + tool + " by " + p.String() +
			" runs depends on its arguments"
		if len(v.DependsOnArguments) > 0 {
			why += " (for " + strings.Join(v.DependsOnArguments, ", ") + ")"
		}
		return x, why
	}
	x = pipeline.Explanation{Tool: tool, Principal: p.String(), Outcome: pipeline.WouldDeny, DecidedBy: v.DecidedBy, Rule: v.Rule, Reason: v.Reason}
	switch {
	case v.Shown:
		x.Outcome = v.Outcome
	case v.DecidedBy == "host":
		x.Outcome = pipeline.NoSuchTool
	}
	return x, ""
}
