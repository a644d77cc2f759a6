package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/identity"
)

// Exit codes of `host explain`, besides exitOK (the call would run) and
// exitUsage (errors, and a call that would fail before any policy looked
// at it: an unknown tool, invalid arguments).
const (
	exitWouldDeny = 3
	exitWouldAsk  = 4
)

// explainCommand is `host explain TOOL [JSON] [--as KIND:ID]`.
func explainCommand(e *env) *cobra.Command {
	var as string
	var attrs []string
	cmd := &cobra.Command{
		Use:   "explain TOOL [JSON]",
		Short: "Say what a call would do and why, without making it",
		Long: "Run stages 0-2 of a call to TOOL with JSON arguments (default {}) as a dry run\n" +
			"in the running host: the argument check, every stage-1 listener and every\n" +
			"guard, each marked dry run. Print what each said, who decided and the outcome\n" +
			"the call would get. Nothing executes, nobody is asked to approve, and no call\n" +
			"is audited. A listener of a plugin that does not declare dry-run support is\n" +
			"reported \"not asked\" instead of being called.\n" +
			"Exit 0 when the call would run, 3 when it would be denied, 4 when it would be\n" +
			"asked about, 2 on errors (an unknown tool or invalid arguments too).",
		Args: explainArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			tool, raw := args[0], "{}"
			if len(args) == 2 {
				raw = args[1]
			}
			if !json.Valid([]byte(raw)) {
				return fail(exitUsage, "arguments %q are not valid JSON (quote them, e.g. '{\"q\":\"plugins\"}')", raw)
			}
			req := admin.ExplainRequest{Tool: tool, Arguments: json.RawMessage(raw)}
			if as != "" || len(attrs) > 0 {
				p, err := parsePrincipal(as, attrs)
				if err != nil {
					return fail(exitUsage, "explain: --as: %v", err)
				}
				req.As = &admin.Principal{ID: p.ID, Kind: p.Kind, Attributes: p.Attributes}
			}
			c, err := e.client()
			if err != nil {
				return err
			}
			x, err := c.Explain(cmd.Context(), req)
			if err != nil {
				return requestError(err)
			}
			if e.json {
				if err := printJSON(e.stdout, x); err != nil {
					return err
				}
			} else {
				printExplanation(e.stdout, x, raw)
			}
			if code := explainExit(x); code != exitOK {
				return fail(code, "")
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&as, "as", "", "explain the call as made for KIND:ID (user:alice, local:root); default: you")
	cmd.Flags().StringArrayVar(&attrs, "attribute", nil, "an attribute of that principal, key:value (group:readers); repeat for more")
	return cmd
}

// explainArgs wants TOOL, and at most one JSON argument, saying so.
func explainArgs(cmd *cobra.Command, args []string) error {
	switch {
	case len(args) == 0:
		return fail(exitUsage, "explain: which tool? usage: host explain TOOL [JSON] [--as KIND:ID] (`host tools` lists them)")
	case len(args) > 2:
		return fail(exitUsage, "explain: %d arguments after the tool; the arguments are one JSON object, quoted: host explain %s '{\"key\":\"value\"}'", len(args)-1, args[0])
	}
	return nil
}

// parsePrincipal reads KIND:ID and its attributes.
func parsePrincipal(as string, attrs []string) (pipeline.Principal, error) {
	kind, id, ok := strings.Cut(as, ":")
	if !ok || kind == "" || id == "" {
		return pipeline.Principal{}, fmt.Errorf("%q is not KIND:ID (user:alice, agent:ci, local:root)", as)
	}
	switch kind {
	case identity.KindUser, identity.KindAgent, identity.KindService, identity.KindLocal:
	default:
		return pipeline.Principal{}, fmt.Errorf("%q: kind %q is not one of user, agent, service, local", as, kind)
	}
	for _, a := range attrs {
		if k, v, ok := strings.Cut(a, ":"); !ok || k == "" || v == "" {
			return pipeline.Principal{}, fmt.Errorf("attribute %q is not key:value (group:readers)", a)
		}
	}
	if len(attrs) > identity.MaxAttributes {
		return pipeline.Principal{}, fmt.Errorf("%d attributes, over the limit of %d", len(attrs), identity.MaxAttributes)
	}
	return pipeline.Principal{ID: id, Kind: kind, Attributes: attrs}, nil
}

// explainExit is the exit code for an explanation.
func explainExit(x pipeline.Explanation) int {
	switch x.Outcome {
	case pipeline.WouldRun:
		return exitOK
	case pipeline.WouldDeny:
		return exitWouldDeny
	case pipeline.WouldAsk:
		return exitWouldAsk
	}
	return exitUsage
}

// printExplanation writes x for a person: one line per listener, then the
// outcome.
func printExplanation(w io.Writer, x pipeline.Explanation, args string) {
	fmt.Fprintf(w, "explain %s %s for %s (dry run: nothing executes)\n", shown(x.Tool), shown(compactJSON(args)), shown(x.Principal))
	switch {
	case x.Outcome == pipeline.BadArgs:
		fmt.Fprintf(w, "  stage 0  %-10s tool of %s; arguments invalid   <- decided\n", "host", shown(x.Owner))
	case x.Owner != "":
		fmt.Fprintf(w, "  stage 0  %-10s tool of %s; arguments valid\n", "host", shown(x.Owner))
	case x.DecidedBy != "":
		// No tool of that name, or a critical plugin down: decided
		// before any listener.
		fmt.Fprintf(w, "  stage 0  %-10s %s   <- decided\n", shown(x.DecidedBy), shown(x.Outcome))
	}
	for _, s := range x.Steps {
		line := fmt.Sprintf("  stage %d  %-10s %s", s.Stage, s.Plugin, s.Verdict)
		if s.Rule != "" {
			line += fmt.Sprintf(" (rule %q)", s.Rule)
		}
		if s.Reason != "" {
			line += ": " + s.Reason
		}
		if s.Decided {
			line += "   <- decided"
		}
		fmt.Fprintln(w, shown(line))
	}
	// The verdict may take two lines (an ASK and what follows approval).
	for _, line := range strings.Split(outcomeLine(x), "\n") {
		fmt.Fprintln(w, shown(line))
	}
	for _, d := range x.Shadow {
		fmt.Fprintln(w, shown("  "+shadowLine(d)))
	}
}

// shadowLine says what a listener in shadow would have decided: `shadow:
// would be DENIED by safety, rule "no-rm" (not applied): ...`.
func shadowLine(d pipeline.ShadowDecision) string {
	by := d.Plugin
	if d.Rule != "" {
		by += fmt.Sprintf(", rule %q", d.Rule)
	}
	line := "shadow: would be " + d.Would + " by " + by + " (not applied)"
	if d.Reason != "" {
		line += ": " + d.Reason
	}
	return line
}

// outcomeLine is the explanation's verdict in one line: `DENIED by safety,
// rule "no-secrets": ...`, `would ASK safety: ...`, `would run`.
func outcomeLine(x pipeline.Explanation) string {
	by := x.DecidedBy
	if x.Rule != "" {
		by += fmt.Sprintf(", rule %q", x.Rule)
	}
	switch x.Outcome {
	case pipeline.WouldRun:
		return "would run"
	case pipeline.WouldAsk:
		line := "would ASK " + by + ": " + x.Reason
		switch {
		case x.Route == deployment.CallerRoute:
			line += "\n  asked of: the calling client (route caller)"
		case x.Route != "":
			line += fmt.Sprintf("\n  asked of: route %q (%s)", x.Route, strings.Join(x.Approvers, " or "))
		}
		if x.IfApproved == pipeline.WouldDeny {
			then := x.IfApprovedBy
			if x.IfApprovedRule != "" {
				then += fmt.Sprintf(", rule %q", x.IfApprovedRule)
			}
			line += "\n  if approved: DENIED by " + then + ": " + x.IfApprovedReason
		} else {
			line += "\n  if approved: would run"
		}
		return line
	case pipeline.WouldDeny:
		return "DENIED by " + by + ": " + x.Reason
	}
	return x.Outcome + ": " + x.Reason
}

func compactJSON(s string) string {
	var v any
	if json.Unmarshal([]byte(s), &v) != nil {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return s
	}
	return string(b)
}
