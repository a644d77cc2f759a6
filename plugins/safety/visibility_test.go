package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// The arguments a random rule set is tried with: nothing at all, and a
// value that each kind of check denies or passes.
var visibilityArgs = []string{
	`{}`,
	`{"path":"secrets/key"}`,
	`{"path":"docs/readme"}`,
	`{"q":"my password"}`,
	`{"url":"https://evil.example.net/x"}`,
	`{"content":"AKIAZ3MHALOI4PQBTWXY"}`,
}

var (
	visTools     = []string{"read_file", "write_file", "shell", "fetch"}
	visSelectors = []string{"group:eng", "group:support", "user:alice", "*"}
	visCallers   = []sdk.Principal{
		{ID: "alice", Kind: "user", Attributes: []string{"group:eng"}},
		{ID: "bob", Kind: "user", Attributes: []string{"group:support"}},
		{ID: "svc", Kind: "service"},
	}
)

func randomSafetyConfig(rng *rand.Rand) Config {
	cfg := Config{AskDestructive: rng.IntN(2) == 0}
	if rng.IntN(2) == 0 {
		cfg.Secrets = []Secrets{{Arguments: []string{"deny", "ask", "off"}[rng.IntN(3)]}}
	}
	for i := range rng.IntN(5) {
		r := Rule{Name: fmt.Sprintf("r%d", i)}
		if rng.IntN(4) != 0 {
			r.Tools = []string{[]string{"read_file", "write_*", "sh?ll", "*", "fetch"}[rng.IntN(5)]}
		}
		switch rng.IntN(4) {
		case 1:
			r.PathPrefix = []string{"secrets"}
		case 2:
			r.Pattern = []string{"(?i)password"}
		case 3:
			r.URLHosts = []string{"example.com"}
		}
		if len(r.Tools) == 0 && r.PathPrefix == nil && r.Pattern == nil && r.URLHosts == nil {
			r.Tools = []string{"*"}
		}
		if rng.IntN(2) == 0 {
			r.Callers = []string{visSelectors[rng.IntN(len(visSelectors))]}
		}
		if rng.IntN(4) == 0 {
			r.NotCallers = []string{visSelectors[rng.IntN(len(visSelectors))]}
		}
		cfg.Deny = append(cfg.Deny, r)
	}
	return cfg
}

// deniedAll runs the plugin's stage-1 filter and guards on c as the host
// would (a filter's Deny, or a guard's reason, denies) and reports whether
// the call is denied.
func deniedAll(t *testing.T, pol *policy, c *sdk.Call) bool {
	t.Helper()
	if pol.ask != nil {
		d, err := pol.ask.Filter(context.Background(), c)
		if err != nil {
			t.Fatalf("filter failed on %s %s: %v", c.Name, c.Arguments, err)
		}
		if d.Verdict == sdk.Deny("").Verdict {
			return true
		}
	}
	return firstDenial(t, pol, c) != ""
}

// TestVisibilityAnswersExactly checks the plugin's answer to the
// visibility question on 200 random configurations: it denies a tool for
// a principal exactly when every one of a set of calls does, and that set
// holds the empty object, which no rule that inspects arguments denies. So
// the answer never hides a tool a call could reach (sound), and hides
// every tool a tools-only rule denies to the principal (exact).
func TestVisibilityAnswersExactly(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 2))
	hidden := 0
	for run := range 200 {
		cfg := randomSafetyConfig(rng)
		pol := mustCompile(t, cfg)
		for _, p := range visCallers {
			for _, tool := range visTools {
				all := true
				for _, args := range visibilityArgs {
					c := call(tool, args)
					c.Principal = p
					c.Tool.Destructive = tool == "shell"
					if !deniedAll(t, pol, c) {
						all = false
					}
				}
				v := call(tool, "")
				v.Principal, v.Execution.DryRun, v.Execution.Visibility = p, true, true
				v.Tool.Destructive = tool == "shell"
				got := deniedAll(t, pol, v)
				if got != all {
					js, _ := json.Marshal(cfg)
					t.Fatalf("run %d, %s, %s: visibility answer hides=%v, every call denied=%v\nconfig %s", run, p, tool, got, all, js)
				}
				if got {
					hidden++
				}
			}
		}
	}
	if hidden < 100 {
		t.Fatalf("only %d hidden (principal, tool) pairs: the test means little", hidden)
	}
}
