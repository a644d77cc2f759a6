package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/identity"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// A random policy for the leak test: rules a first-match stage-1 listener
// and a deny-only guard apply, written so that each answers the visibility
// question the way a policy plugin should.

const xSchema = `{"type":"object","properties":{"x":{"type":"string"}}}`

// argDomain covers every branch a rule can take on the arguments: x equal
// to the one value a rule tests, another value, and no x at all.
var argDomain = []string{`{"x":"a"}`, `{"x":"b"}`, `{}`}

type randRule struct {
	callers []string // selectors; empty: everyone
	tools   []string // empty: every tool
	cond    bool     // applies only when x == "a"
	verdict pipeline.Verdict
}

func (r randRule) appliesTo(p identity.Principal, tool string) bool {
	if len(r.callers) > 0 && !slices.ContainsFunc(r.callers, p.Matches) {
		return false
	}
	return len(r.tools) == 0 || slices.Contains(r.tools, tool)
}

func xIsA(e *pipeline.Execution) bool {
	var in struct{ X string }
	return e.Decode(&in) == nil && in.X == "a"
}

func decision(v pipeline.Verdict, why string) pipeline.Decision {
	switch v {
	case pipeline.VerdictAllow:
		return pipeline.Allow()
	case pipeline.VerdictAsk:
		return pipeline.Ask(why)
	}
	return pipeline.Deny(why)
}

// firstMatch is a stage-1 listener: the first rule that applies decides;
// none, and def decides (0: next). Asked the visibility question, it
// denies only when a rule without condition denies before any rule could
// allow or ask.
func firstMatch(rules []randRule, def pipeline.Verdict) pipeline.PreExecuteFunc {
	return func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
		p := e.Principal()
		// skipped: a rule on the arguments was passed over, so that what
		// follows is not the answer for every argument set.
		skipped := false
		for i, r := range rules {
			if !r.appliesTo(p, e.Name()) {
				continue
			}
			why := fmt.Sprintf("rule %d", i)
			if e.Visibility() {
				if !r.cond {
					if !skipped {
						pipeline.NoteAnyArguments(ctx)
					}
					return decision(r.verdict, why), nil
				}
				if r.verdict != pipeline.VerdictDeny {
					return pipeline.Allow(), nil // some arguments may get through
				}
				skipped = true
				continue // the arguments it does not match go on
			}
			if !r.cond || xIsA(e) {
				return decision(r.verdict, why), nil
			}
		}
		if e.Visibility() && !skipped {
			pipeline.NoteAnyArguments(ctx)
		}
		if def == 0 {
			return next(ctx), nil
		}
		return decision(def, "default"), nil
	}
}

// denyGuard denies the calls its rules (deny ones only) apply to.
func denyGuard(rules []randRule) pipeline.GuardFunc {
	return func(ctx context.Context, e *pipeline.Execution) (string, error) {
		skipped := false
		for i, r := range rules {
			if r.verdict != pipeline.VerdictDeny || !r.appliesTo(e.Principal(), e.Name()) {
				continue
			}
			if !r.cond || (!e.Visibility() && xIsA(e)) {
				return fmt.Sprintf("guard rule %d", i), nil
			}
			skipped = true
		}
		if e.Visibility() && !skipped {
			pipeline.NoteAnyArguments(ctx) // it passes every call
		}
		return "", nil
	}
}

var (
	leakTools      = []string{"t0", "t1", "t2", "t3", "t4", "t5"}
	leakSelectors  = []string{"group:eng", "group:support", "user:alice", "*"}
	leakPrincipals = []identity.Principal{
		{ID: "alice", Kind: "user", Attributes: []string{"group:eng"}},
		{ID: "bob", Kind: "user", Attributes: []string{"group:support"}},
		{ID: "carol", Kind: "user", Attributes: []string{"group:eng", "group:support"}},
		{ID: "dave", Kind: "agent"},
	}
)

func randRules(rng *rand.Rand, conds bool) []randRule {
	rules := make([]randRule, rng.IntN(5))
	for i := range rules {
		r := &rules[i]
		if rng.IntN(2) == 0 {
			r.callers = []string{leakSelectors[rng.IntN(len(leakSelectors))]}
		}
		if rng.IntN(4) != 0 {
			for _, tl := range leakTools {
				if rng.IntN(3) == 0 {
					r.tools = append(r.tools, tl)
				}
			}
			if len(r.tools) == 0 {
				r.tools = []string{leakTools[rng.IntN(len(leakTools))]}
			}
		}
		r.cond = conds && rng.IntN(2) == 0
		r.verdict = []pipeline.Verdict{pipeline.VerdictAllow, pipeline.VerdictDeny, pipeline.VerdictAsk}[rng.IntN(3)]
	}
	return rules
}

// leakPipeline loads a random policy into a fresh pipeline. exact says
// whether every listener answers exactly (no condition on the arguments,
// no listener that cannot answer): then the visible set must equal the
// callable set, not only contain it.
func leakPipeline(t *testing.T, rng *rand.Rand) (tools *pipeline.Tools, exact bool, desc string) {
	k, tools := newTools(t, pipeline.Options{})
	conds := rng.IntN(2) == 0
	var ts []pipeline.Tool
	for _, n := range leakTools {
		ts = append(ts, pipeline.Tool{ToolDescriptor: wire.ToolDescriptor{Name: n, Description: "Tool " + n + ".", Parameters: json.RawMessage(xSchema)}, Execute: okBody("ran")})
	}
	load(t, k, fakePlugin{name: "toolbox", tools: ts}.plugin())
	pre, guards := randRules(rng, conds), randRules(rng, conds)
	def := []pipeline.Verdict{0, pipeline.VerdictAllow, pipeline.VerdictDeny, pipeline.VerdictAsk}[rng.IntN(4)] // 0: next
	blind := rng.IntN(4) == 0
	desc = fmt.Sprintf("pre=%+v default=%d guards=%+v blind=%v", pre, def, guards, blind)
	load(t, k, kernel.Plugin{Name: "policy", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
		reg, err := pipeline.RegistrarOf(s)
		if err != nil {
			return err
		}
		if _, err := reg.OnPreExecuteVisible(firstMatch(pre, def)); err != nil {
			return err
		}
		_, err = reg.GuardVisible(denyGuard(guards))
		return err
	}})
	if blind {
		// Inner to the policy and unable to answer: it denies one tool
		// with some arguments, and allows it with the others, which
		// overrides a default deny.
		only := leakTools[rng.IntN(len(leakTools))]
		load(t, k, fakePlugin{name: "blind", only: []string{only}, pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			if xIsA(e) {
				return pipeline.Allow(), nil
			}
			return pipeline.Deny("blind says no"), nil
		}}.plugin())
	}
	return tools, !conds && !blind, desc
}

// TestVisibilityLeak checks the property the visible set promises, on 200
// random policies and four principals each: it is a sound
// over-approximation of the callable set (every tool for which Explain
// finds arguments that are not denied, at once or once approved, is
// shown), and it is exactly the
// callable set when every listener answers exactly.
func TestVisibilityLeak(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 1))
	var exactRuns, hidden, exactShown, dependent int
	for run := range 200 {
		tools, exact, desc := leakPipeline(t, rng)
		if exact {
			exactRuns++
		}
		for _, p := range leakPrincipals {
			ctx := pipeline.WithPrincipal(testkit.Context(t), p)
			set := tools.VisibleSet(ctx, p)
			for _, name := range leakTools {
				callable := false
				for _, args := range argDomain {
					x := tools.Explain(ctx, name, json.RawMessage(args), "test")
					// Asked, then denied by a guard once approved, is
					// denied: such a call never runs.
					if x.Outcome == pipeline.WouldRun || x.Outcome == pipeline.WouldAsk && x.IfApproved == pipeline.WouldRun {
						callable = true
					}
				}
				shown := set.Has(name)
				v := tools.Visible(ctx, name)
				if v.Shown != shown {
					t.Fatalf("run %d, %s, %s: Visible says shown=%v, the set %v", run, p, name, v.Shown, shown)
				}
				if exact && !v.Exact {
					t.Fatalf("run %d: exact policy, %s for %s answered as depending on %v\n%s", run, name, p, v.DependsOnArguments, desc)
				}
				if v.Shown && v.Exact {
					// Answered for any arguments: every argument set gets
					// that outcome, as Explain finds it.
					exactShown++
					for _, args := range argDomain {
						if x := tools.Explain(ctx, name, json.RawMessage(args), "test"); x.Outcome != v.Outcome {
							t.Fatalf("run %d: %s for %s answered %s for any arguments, Explain says %s for %s\n%s", run, name, p, v.Outcome, x.Outcome, args, desc)
						}
					}
				}
				if v.Shown && !v.Exact {
					dependent++
				}
				if callable && !shown {
					t.Fatalf("run %d: %s is callable by %s but hidden (a leak the other way: a callable tool hidden)\n%s", run, name, p, desc)
				}
				if exact && shown != callable {
					t.Fatalf("run %d: exact policy, %s for %s: shown=%v callable=%v\n%s", run, name, p, shown, callable, desc)
				}
				if !shown {
					hidden++
				}
			}
		}
	}
	// The test means something only if both cases came up often.
	if exactRuns < 40 || hidden < 200 || exactShown < 200 || dependent < 100 {
		t.Fatalf("too few exact runs (%d), hidden tools (%d), shown ones answered for any arguments (%d) or depending on them (%d) for the test to mean much", exactRuns, hidden, exactShown, dependent)
	}
	t.Logf("%d runs exact, %d hidden (principal, tool) pairs, %d shown for any arguments, %d depending on them", exactRuns, hidden, exactShown, dependent)
}

// TestVisibilityUnansweredMayAllow: a listener registered without the
// visibility answer, one that returns ErrNotAsked and one that fails all
// count as ones that may allow, and are named.
func TestVisibilityUnansweredMayAllow(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	denyAll := func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
		return pipeline.Deny("no"), nil
	}
	load(t, k,
		fakePlugin{name: "toolbox", tools: []pipeline.Tool{tool("a", okBody(1)), tool("b", okBody(1)), tool("c", okBody(1)), tool("d", okBody(1))}}.plugin(),
		fakePlugin{name: "old", only: []string{"a"}, pre: denyAll}.plugin(),
		kernel.Plugin{Name: "answers", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, _ := pipeline.RegistrarOf(s)
			if _, err := reg.OnPreExecuteVisible(func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				switch {
				case e.Name() == "b" && e.Visibility():
					return pipeline.Decision{}, pipeline.ErrNotAsked
				case e.Name() == "c" && e.Visibility():
					return pipeline.Decision{}, fmt.Errorf("broken")
				case e.Name() == "d":
					return pipeline.Deny("d is off"), nil
				case e.Name() == "a":
					return next(ctx), nil
				}
				return pipeline.Deny("no"), nil
			}); err != nil {
				return err
			}
			_, err := reg.Guard(func(ctx context.Context, e *pipeline.Execution) (string, error) { return "guard says no", nil })
			return err
		}},
	)
	ctx := testkit.Context(t)
	got := map[string]string{}
	for _, n := range []string{"a", "b", "c", "d", "nope"} {
		v := tools.Visible(ctx, n)
		got[n] = fmt.Sprintf("%v %s %s", v.Shown, v.DecidedBy, strings.Join(v.Unanswered, ","))
	}
	want := map[string]string{
		"a":    "true  old,answers", // old cannot answer; the guard registered with Guard cannot either
		"b":    "true  answers",
		"c":    "true  answers",
		"d":    "false answers ",
		"nope": "false host ",
	}
	for n, w := range want {
		if got[n] != w {
			t.Errorf("%s: got %q, want %q", n, got[n], w)
		}
	}
	if names := tools.VisibleSet(ctx, pipeline.PrincipalFrom(ctx)).Names(); !slices.Equal(names, []string{"a", "b", "c"}) {
		t.Errorf("visible set %v, want [a b c]", names)
	}
}

// TestVisibleSetCache: a set is computed once per principal class and
// pipeline version, whatever the order of the attributes, and computed
// again once the pipeline changes.
func TestVisibleSetCache(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	var asked int64
	var mu = make(chan struct{}, 1)
	mu <- struct{}{}
	load(t, k,
		fakePlugin{name: "toolbox", tools: []pipeline.Tool{tool("a", okBody(1)), tool("b", okBody(1))}}.plugin(),
		kernel.Plugin{Name: "rules", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, _ := pipeline.RegistrarOf(s)
			_, err := reg.GuardVisible(func(ctx context.Context, e *pipeline.Execution) (string, error) {
				<-mu
				asked++
				mu <- struct{}{}
				if e.Name() == "b" && e.Principal().Matches("group:support") {
					return "support may not use b", nil
				}
				return "", nil
			})
			return err
		}},
	)
	ctx := testkit.Context(t)
	p1 := identity.Principal{ID: "k", Kind: "agent", Attributes: []string{"group:support", "team:x"}}
	p2 := identity.Principal{ID: "k", Kind: "agent", Attributes: []string{"team:x", "group:support"}}
	s1 := tools.VisibleSet(ctx, p1)
	s2 := tools.VisibleSet(ctx, p2)
	if s1 != s2 || !slices.Equal(s1.Names(), []string{"a"}) || asked != 2 {
		t.Fatalf("sets %v %v (same: %v), guard asked %d times, want one set [a] asked twice", s1.Names(), s2.Names(), s1 == s2, asked)
	}
	load(t, k, fakePlugin{name: "more", tools: []pipeline.Tool{tool("c", okBody(1))}}.plugin())
	s3 := tools.VisibleSet(ctx, p1)
	if s3 == s1 || !slices.Equal(s3.Names(), []string{"a", "c"}) || s3.Generation() == s1.Generation() {
		t.Fatalf("after a new tool: %v (gen %d, was %d), want a new set [a c]", s3.Names(), s3.Generation(), s1.Generation())
	}
	if s1.Equal(s3) || !s1.Equal(s2) {
		t.Fatal("Equal is wrong")
	}
}

// TestVisibleOnlyCallIsUnknown: with WithVisibleOnly, a call of a tool
// hidden from its principal gets what a call of a tool that does not exist
// gets, and its observers see the same; without it, the call is made (and
// denied, here, by the rule that hides it).
func TestVisibleOnlyCallIsUnknown(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	var rec recorder
	load(t, k,
		fakePlugin{name: "toolbox", tools: []pipeline.Tool{tool("write", okBody("wrote"))}}.plugin(),
		rec.plugin(),
		kernel.Plugin{Name: "rules", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, _ := pipeline.RegistrarOf(s)
			_, err := reg.GuardVisible(func(ctx context.Context, e *pipeline.Execution) (string, error) {
				if e.Principal().Matches("group:support") {
					return "support may not write", nil
				}
				return "", nil
			}, "write")
			return err
		}},
	)
	support := identity.Principal{ID: "s", Kind: "agent", Attributes: []string{"group:support"}}
	ctx := pipeline.WithVisibleOnly(pipeline.WithPrincipal(testkit.Context(t), support))
	hidden := tools.Execute(ctx, "write", json.RawMessage(`{"a":1}`), "c")
	unknown := tools.Execute(ctx, "nope", json.RawMessage(`{"a":1}`), "c")
	norm := func(r pipeline.Result) string {
		return fmt.Sprintf("%v %s %q %q", r.OK, r.Code(), strings.ReplaceAll(r.Error.Message, "nope", "NAME"), r.DecidedBy)
	}
	if a, b := norm(hidden), strings.ReplaceAll(norm(unknown), "NAME", "write"); a != strings.ReplaceAll(b, "nope", "write") || hidden.Code() != pipeline.CodeUnknownTool {
		t.Fatalf("hidden: %s\nunknown: %s", a, b)
	}
	seen := rec.all()
	if len(seen) != 2 || seen[0].args != seen[1].args || norm(seen[0].result) != norm(hidden) {
		t.Fatalf("observers saw %+v", seen)
	}
	// Not asked for: the call is made and denied by the guard.
	plain := tools.Execute(pipeline.WithPrincipal(testkit.Context(t), support), "write", json.RawMessage(`{}`), "c")
	wantCode(t, plain, pipeline.CodeDenied)
	// Another principal sees the tool and calls it.
	eng := identity.Principal{ID: "e", Kind: "agent", Attributes: []string{"group:eng"}}
	wantCode(t, tools.Execute(pipeline.WithVisibleOnly(pipeline.WithPrincipal(testkit.Context(t), eng)), "write", json.RawMessage(`{}`), "c"), "")
}
