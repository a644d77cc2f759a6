package main

import (
	"context"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// visibilityAnswer is the stage-1 filter's answer to the visibility
// question (no arguments): what it would do to every call of the tool by
// the principal, marked as holding for any arguments (ForAnyArguments)
// where it does, so that `host replay` can judge calls recorded without
// their arguments. The first ask rule that matches the tool and the
// principal and looks at nothing else asks; ask_destructive asks about a
// destructive tool; otherwise it passes. That answer holds for any
// arguments unless an ask rule on paths, patterns, URLs or offerings of
// the tool came first (some arguments are asked about, others not), or
// the secrets check is on (a credential denies the call, or asks about
// one that would pass; with arguments = "ask" it only adds to an ask
// rule's question).
func visibilityAnswer(ctx context.Context, call *sdk.Call, askDestructive bool, sp *secretsPolicy, asks []*rule) (sdk.Decision, error) {
	byArguments := false
	for _, r := range asks {
		if _, ok := r.matchTool(call.Name); !ok || !r.appliesTo(call.Principal) {
			continue // not about this tool or principal, whatever the arguments
		}
		if r.narrowed() || len(r.prefixes) > 0 || len(r.patterns) > 0 || r.hasURLHosts {
			byArguments = true // it asks about some calls, by their arguments
			continue
		}
		why, err := r.check(ctx, call)
		if err != nil || why == "" {
			// A tools-only rule that matches names its reason; anything
			// else is a host's bug: answer as one that may allow.
			return sdk.Pass(), err
		}
		if !byArguments && (sp == nil || sp.arguments == argumentsAsk) {
			call.ForAnyArguments()
		}
		d := sdk.Ask(why + ": allow this call?")
		d.Rule, d.Route = r.name, r.route
		return d, nil
	}
	exact := !byArguments && sp == nil
	if askDestructive && call.Tool.Destructive {
		if exact {
			call.ForAnyArguments()
		}
		d := sdk.Ask(call.Name + " is destructive: allow this call?")
		d.Rule = askDestructiveRule
		return d, nil
	}
	if exact {
		call.ForAnyArguments()
	}
	return sdk.Pass(), nil
}
