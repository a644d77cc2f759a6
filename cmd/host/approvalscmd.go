package main

import (
	"context"
	"fmt"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/plugkit-go/plugkit/admin"
)

// approvalsCommand is `host approvals`: the requests of the deployment's
// approval routes, answered as whoever runs the command (the admin
// socket's peer).
func approvalsCommand(e *env) *cobra.Command {
	root := &cobra.Command{Use: "approvals", Short: "List and answer the calls waiting for an approval route's approvers"}
	list := &cobra.Command{
		Use: "list", Short: "List the approval requests, pending ones first", Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return listApprovals(cmd.Context(), e) },
	}
	show := &cobra.Command{
		Use: "show ID", Short: "Show one request: tool, arguments (credentials hidden), caller, route, decisions", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return showApproval(cmd.Context(), e, args[0]) },
	}
	var reason string
	approve := &cobra.Command{
		Use: "approve ID", Short: "Approve a request as yourself (never your own call)", Args: cobra.ExactArgs(1),
		Long: "Approve request ID as the user running this command. The host refuses the call's\n" +
			"own principal and anyone the route's approvers do not name; a quorum needs that\n" +
			"many distinct approvers. Exit 0 when the answer counted, 1 when it was refused.",
		RunE: func(cmd *cobra.Command, args []string) error {
			return decideApproval(cmd.Context(), e, args[0], true, reason)
		},
	}
	approve.Flags().StringVar(&reason, "reason", "", "why, for the record")
	var denyReason string
	deny := &cobra.Command{
		Use: "deny ID", Short: "Deny a request as yourself: the call ends DENIED with your reason", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return decideApproval(cmd.Context(), e, args[0], false, denyReason)
		},
	}
	deny.Flags().StringVar(&denyReason, "reason", "", "why, told to the caller and recorded")
	root.AddCommand(list, show, approve, deny)
	return root
}

func listApprovals(ctx context.Context, e *env) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	reqs, err := c.Approvals(ctx)
	if err != nil {
		return requestError(err)
	}
	if e.json {
		return printJSON(e.stdout, reqs)
	}
	if len(reqs) == 0 {
		fmt.Fprintln(e.stdout, "no approval requests")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "ID\tSTATE\tTOOL\tFOR\tROUTE\tAPPROVALS\tAGE")
	for _, r := range reqs {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d/%d\t%s\n", shown(r.ID), r.State, shown(r.Tool), shown(r.Principal), shown(r.Route),
			r.Approvals(), r.Quorum, time.Since(r.Created).Round(time.Second))
	}
	return tw.Flush()
}

func showApproval(ctx context.Context, e *env, id string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	r, err := c.Approval(ctx, id)
	if err != nil {
		return requestError(err)
	}
	r.Arguments = redactedArguments(r.Arguments)
	if e.json {
		return printJSON(e.stdout, r)
	}
	printRequest(e, r)
	return nil
}

// redactedArguments hides the credentials in a request's arguments: a
// terminal's scrollback outlives the decision.
func redactedArguments(args string) string {
	if red, hits, err := promptScanner.RedactJSON([]byte(args)); err == nil && len(hits) > 0 {
		return string(red)
	}
	return args
}

func printRequest(e *env, r admin.ApprovalRequest) {
	fmt.Fprintf(e.stdout, "request    %s (%s)\n", shown(r.ID), r.State)
	if r.Holder != "" {
		fmt.Fprintf(e.stdout, "held by    %s (the replica where the call waits)\n", shown(r.Holder))
	}
	fmt.Fprintf(e.stdout, "tool       %s\n", shown(r.Tool))
	fmt.Fprintf(e.stdout, "arguments  %s\n", shown(r.Arguments))
	fmt.Fprintf(e.stdout, "args hash  %s\n", r.ArgsSHA256)
	fmt.Fprintf(e.stdout, "for        %s (caller %s)\n", shown(r.Principal), shown(r.Caller))
	fmt.Fprintf(e.stdout, "route      %s: %s, %d of %d approvals\n", shown(r.Route), shown(strings.Join(r.Approvers, " or ")), r.Approvals(), r.Quorum)
	fmt.Fprintf(e.stdout, "asked      %s\n", shown(r.Question))
	fmt.Fprintf(e.stdout, "created    %s (expires %s)\n", r.Created.UTC().Format(time.RFC3339), r.Expires.UTC().Format(time.RFC3339))
	for _, d := range r.Decisions {
		verb := "approved"
		if !d.Approve {
			verb = "denied"
		}
		line := fmt.Sprintf("%s %s at %s", d.By, verb, d.At.UTC().Format(time.RFC3339))
		if d.Reason != "" {
			line += ": " + d.Reason
		}
		if d.Refused != "" {
			line += " (refused: " + d.Refused + ")"
		}
		fmt.Fprintf(e.stdout, "answer     %s\n", shown(line))
	}
	if r.Reason != "" {
		fmt.Fprintf(e.stdout, "ended      %s\n", shown(r.Reason))
	}
}

func decideApproval(ctx context.Context, e *env, id string, approve bool, reason string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	// The answer is for the arguments this command was shown: a request
	// whose call has other arguments refuses it.
	cur, err := c.Approval(ctx, id)
	if err != nil {
		return requestError(err)
	}
	r, err := c.Decide(ctx, id, approve, admin.DecideRequest{Reason: reason, ArgsSHA256: cur.ArgsSHA256})
	if err != nil {
		if _, ok := err.(*admin.ConnectError); ok {
			return requestError(err)
		}
		return fail(exitFailed, "%v", err)
	}
	if e.json {
		return printJSON(e.stdout, r)
	}
	switch r.State {
	case "pending":
		fmt.Fprintf(e.stdout, "%s: your approval counted, %d of %d; still waiting\n", shown(r.ID), r.Approvals(), r.Quorum)
	default:
		fmt.Fprintf(e.stdout, "%s: %s (%s)\n", shown(r.ID), r.State, shown(r.Reason))
	}
	return nil
}
