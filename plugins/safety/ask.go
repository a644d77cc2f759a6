package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/secrets"
)

// preExecute is the stage-1 filter. With secrets set (arguments = "ask",
// or "deny" beside ask_destructive), a call whose arguments carry a
// credential is denied or asked about, naming what was found; then the
// first ask rule that matches asks, naming its approval route; with
// askDestructive, a destructive tool is asked about; otherwise it passes
// (no opinion, the chain goes on). It reads the descriptor the host
// attaches to the call, so it covers tools registered after it by any
// plugin. A filter, not a wrapper: it needs one RPC and never has to see
// what the rest of the chain decided. The question quotes the arguments
// with every credential replaced by its marker.
func preExecute(askDestructive bool, sp *secretsPolicy, asks []*rule, scan *secrets.Scanner) func(context.Context, *sdk.Call) (sdk.Decision, error) {
	return func(ctx context.Context, call *sdk.Call) (sdk.Decision, error) {
		if call.Visibility() {
			// No arguments: what every call of the tool would get.
			return visibilityAnswer(ctx, call, askDestructive, sp, asks)
		}
		found := ""
		if sp != nil {
			hits, err := sp.argumentHits(call)
			if err != nil {
				return sdk.Decision{}, err
			}
			if len(hits) > 0 {
				if sp.arguments == argumentsDeny {
					d := sdk.Deny(argumentsReason(hits))
					d.Rule = secretsName
					return d, nil
				}
				found = describe(hits)
			}
		}
		// The ask rules come before ask_destructive: a rule that names a
		// route is the operator's more specific word.
		for _, r := range asks {
			why, err := r.check(ctx, call)
			if err != nil {
				return sdk.Decision{}, err
			}
			if why == "" {
				continue
			}
			if found != "" {
				why += "; its arguments carry a credential (" + found + ")"
			}
			d := sdk.Ask(why + ": allow this call? arguments: " + briefArguments(scan, call.Arguments))
			d.Rule, d.Route = r.name, r.route
			return d, nil
		}
		destructive := askDestructive && call.Tool.Destructive
		var d sdk.Decision
		switch {
		case found != "" && destructive:
			d = sdk.Ask(call.Name + " is destructive and its arguments carry a credential (" + found + "): allow this call? arguments: " + briefArguments(scan, call.Arguments))
			d.Rule = secretsName
		case found != "":
			d = sdk.Ask("the arguments of " + call.Name + " carry a credential (" + found + "): allow this call? arguments: " + briefArguments(scan, call.Arguments))
			d.Rule = secretsName
		case destructive:
			d = sdk.Ask(call.Name + " is destructive: allow this call? arguments: " + briefArguments(scan, call.Arguments))
			d.Rule = askDestructiveRule
		default:
			return sdk.Pass(), nil
		}
		return d, nil
	}
}

// askDestructiveRule is the rule name the ask_destructive question reports
// (Decision.Rule), as the setting is spelled in the deployment.
const askDestructiveRule = "ask_destructive"

// briefArguments renders arguments for a question a person reads:
// credentials replaced by their markers, each value cut to a short length
// (a file's whole content would drown the path next to it), the whole cut
// again, keys sorted so that the same call always reads the same.
func briefArguments(scan *secrets.Scanner, raw json.RawMessage) string {
	const perValue, total = 80, 400
	raw, _, err := scan.RedactJSON(raw)
	if err != nil {
		return "(not shown: " + err.Error() + ")"
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(raw, &args) != nil || args == nil {
		return brief(compact(raw), total)
	}
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + "=" + brief(compact(args[k]), perValue)
	}
	return brief("{"+strings.Join(parts, ", ")+"}", total)
}

func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}
