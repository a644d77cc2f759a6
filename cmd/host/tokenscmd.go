package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/plugkit-go/plugkit/admin"
)

// tokensCommand is `host tokens list|revoke`: the upstream tokens the host
// keeps for the users who consented to bridged servers (user_consent).
func tokensCommand(e *env) *cobra.Command {
	tokens := &cobra.Command{Use: "tokens", Short: "List or revoke the users' tokens for bridged servers that need consent"}
	list := &cobra.Command{
		Use:   "list [PRINCIPAL [PLUGIN]]",
		Short: "List the upstream tokens the running host keeps, never the tokens themselves",
		Long: "List who consented to which bridged server (a plugin whose auth block is\n" +
			"user_consent): principal, plugin, upstream, scope, expiry and whether it can be\n" +
			"refreshed. PRINCIPAL is KIND:ID, or an ID of any kind. No token is printed.",
		Args: cobra.MaximumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return tokensRun(cmd, e, args, false)
		},
	}
	revoke := &cobra.Command{
		Use:   "revoke PRINCIPAL [PLUGIN]",
		Short: "Drop a user's upstream tokens: their next call asks for consent again",
		Long: "Drop the tokens PRINCIPAL (KIND:ID, or an ID of any kind) gave the host for\n" +
			"PLUGIN's upstream, or for every plugin. Their next call of that server is\n" +
			"DENIED with a new authorization URL. Exit 1 when nothing was kept for them.",
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			return tokensRun(cmd, e, args, true)
		},
	}
	tokens.AddCommand(list, revoke)
	return tokens
}

func tokensRun(cmd *cobra.Command, e *env, args []string, revoke bool) error {
	var req admin.TokensRequest
	if len(args) > 0 {
		req.Principal = args[0]
	}
	if len(args) > 1 {
		req.Plugin = args[1]
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	what, f := "tokens list", c.Tokens
	if revoke {
		what, f = "tokens revoke", c.RevokeTokens
	}
	list, err := f(cmd.Context(), req)
	if err != nil {
		return fail(exitFailed, "%s: %v", what, err)
	}
	if e.json {
		if err := printJSON(e.stdout, admin.TokensAnswer{Tokens: list}); err != nil {
			return err
		}
	} else if revoke {
		for _, t := range list {
			fmt.Fprintf(e.stdout, "revoked %s's token for %s (%s); at its authorization server: %s\n", shownText(t.Principal), shownText(t.Plugin), shownText(t.Upstream), shownText(t.AtServer))
		}
	} else if len(list) == 0 {
		fmt.Fprintln(e.stdout, "no upstream tokens kept")
	} else {
		tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "PRINCIPAL\tPLUGIN\tUPSTREAM\tSCOPE\tEXPIRES\tREFRESHABLE")
		for _, t := range list {
			exp := "-"
			if !t.Expiry.IsZero() {
				exp = t.Expiry.UTC().Format(time.RFC3339)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%v\n", shownText(t.Principal), shownText(t.Plugin), shownText(t.Upstream), shownText(t.Scope), exp, t.Refreshable)
		}
		tw.Flush()
	}
	if revoke && len(list) == 0 {
		return fail(exitFailed, "tokens revoke: no token kept for %s", req.Principal)
	}
	return nil
}
