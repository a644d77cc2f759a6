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
// p at once. Its only exact answer is a denial of every call whatever the
// arguments (a rule on the tool alone, or on the principal's group, or no
// such tool), which judges the call. Any other answer says only that some
// calls may run, and which ones depends on the arguments (or on listeners
// that cannot answer without them): then why says so and the call is not
// judged. was is the recorded outcome.
func withoutArguments(ctx context.Context, h *host.Host, p pipeline.Principal, tool, was string) (x pipeline.Explanation, why string) {
	const unrecorded = "arguments not recorded (the audit's record_arguments is off)"
	if was == pipeline.BadArgs {
		// Stage 0 refused the arguments themselves.
		return x, unrecorded + ", and the call was refused for them (" + was + ")"
	}
	v := h.Pipeline().Visible(pipeline.WithPrincipal(ctx, p), tool)
	if v.Shown {
		why = unrecorded + ", and under the candidate some calls of " + tool + " for " + p.String() +
			" may run: whether this one would depends on its arguments"
		if len(v.Unanswered) > 0 {
			why += " (and on " + strings.Join(v.Unanswered, ", ") + ", which cannot answer without them)"
		}
		return x, why
	}
	x = pipeline.Explanation{Tool: tool, Principal: p.String(), Outcome: pipeline.WouldDeny, DecidedBy: v.DecidedBy, Rule: v.Rule, Reason: v.Reason}
	if v.DecidedBy == "host" {
		x.Outcome = pipeline.NoSuchTool
	}
	return x, ""
}
