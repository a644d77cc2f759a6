package main

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"testing"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// outcome is what the plugin does to c as the host would run it: its
// filter's verdict and rule ("pass", "ask r1"; "denied" by it or a guard), then, unless the
// filter denied, whether a guard denies (which then is the outcome). Each listener gets a call of its
// own, as each RPC does. marked says whether every listener that passed
// or asked said so for any arguments (a denial is for any).
func outcome(t *testing.T, pol *policy, mk func() *sdk.Call) (out string, marked bool) {
	t.Helper()
	marked = true
	out = "pass"
	if pol.ask != nil {
		c := mk()
		d, err := pol.ask.Filter(context.Background(), c)
		if err != nil {
			t.Fatalf("filter failed on %s %s: %v", c.Name, c.Arguments, err)
		}
		switch d.Verdict {
		case sdk.Deny("").Verdict:
			return "denied", true
		case sdk.Ask("").Verdict:
			out = "ask " + d.Rule
		}
		marked = c.AnsweredForAnyArguments()
	}
	for _, g := range pol.guards {
		c := mk()
		if len(g.Tools) > 0 && !contains(g.Tools, c.Name) {
			continue // the host's interest filter: by name alone
		}
		reason, err := g.Check(context.Background(), c)
		if err != nil || reason != "" {
			// Denied whatever the filter said (asked, then refused).
			return "denied", true
		}
		marked = marked && c.AnsweredForAnyArguments()
	}
	return out, marked
}

// TestVisibilityForAnyArguments: on 300 random configurations (deny and ask
// rules by tool and principal, on paths, patterns and URLs, secrets,
// ask_destructive), whenever the plugin marks its visibility answer as
// holding for any arguments, every call of the tool by the principal gets
// that answer, ask rule included; and a configuration without argument
// checks or secrets is always answered so.
func TestVisibilityForAnyArguments(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 3))
	var exact, dependent int
	for run := range 300 {
		cfg := randomSafetyConfig(rng)
		for i := range cfg.Deny {
			if rng.IntN(3) == 0 {
				cfg.Ask = append(cfg.Ask, AskRule{Rule: cfg.Deny[i], Approval: "oncall"})
				cfg.Ask[len(cfg.Ask)-1].Name += "-ask"
			}
		}
		pol := mustCompile(t, cfg)
		argFree := len(cfg.Secrets) == 0
		for _, r := range append(cfg.Deny, func() (rs []Rule) {
			for _, a := range cfg.Ask {
				rs = append(rs, a.Rule)
			}
			return rs
		}()...) {
			if r.PathPrefix != nil || r.Pattern != nil || r.URLHosts != nil {
				argFree = false
			}
		}
		for _, p := range visCallers {
			for _, tool := range visTools {
				vis, marked := outcome(t, pol, func() *sdk.Call {
					v := call(tool, "")
					v.Principal, v.Execution.DryRun, v.Execution.Visibility = p, true, true
					v.Tool.Destructive = tool == "shell"
					return v
				})
				js, _ := json.Marshal(cfg)
				if argFree && !marked {
					t.Fatalf("run %d, %s, %s: no argument checks, yet answered as depending on the arguments\nconfig %s", run, p, tool, js)
				}
				if !marked {
					dependent++
					continue
				}
				exact++
				for _, args := range visibilityArgs {
					got, _ := outcome(t, pol, func() *sdk.Call {
						c := call(tool, args)
						c.Principal = p
						c.Tool.Destructive = tool == "shell"
						return c
					})
					if got != vis {
						t.Fatalf("run %d, %s, %s: answered %q for any arguments, but %s gets %q\nconfig %s", run, p, tool, vis, args, got, js)
					}
				}
			}
		}
	}
	if exact < 500 || dependent < 300 {
		t.Fatalf("%d answers for any arguments, %d depending on them: too few of one for the test to mean much", exact, dependent)
	}
	t.Logf("%d answers for any arguments, %d depending on them", exact, dependent)
}
