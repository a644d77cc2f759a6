package pipeline

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/plugkit-go/plugkit/kernel"
)

// Rules a plugin registers in shadow itself (a safety deny rule marked
// mode = "shadow" in the plugin's configuration) are put in shadow by the
// same mechanism as a deployment's shadow block: each registration carries
// its ShadowRule, the snapshot collects them, and a call sees them merged
// with the deployment's (SetShadow). They live and die with the
// registration, so a plugin that is re-applied with the rule enforced
// ends its shadow mode, and nothing has to be undone by hand.

// StartedGuardInShadow is StartedGuardVisible for a guard its plugin puts
// in shadow: its denials and failures for rule (the guard's name, which
// its answers name) are noted on the call and not applied, except for the
// principals enforceFor selects (a canary).
func (r *Registrar) StartedGuardInShadow(start GuardStart, rule string, enforceFor []string, tools ...string) (*kernel.Effect, error) {
	if rule == "" {
		return nil, fmt.Errorf("a guard in shadow needs a name: its answers are matched to its rule by it")
	}
	fn := func(ctx context.Context, e *Execution) (string, error) { return start(ctx, e)() }
	g := newEntry(GuardFunc(fn), r.s.Name(), tools)
	g.concurrent, g.start, g.visible = true, start, true
	g.shadow = &ShadowRule{Plugin: r.s.Name(), Rule: rule, EnforceFor: slices.Clone(enforceFor)}
	return r.s.Contribute(PointGuards, "", 0, g)
}

// declaredShadows is the shadow set of the guards registered in shadow,
// nil when there are none.
func declaredShadows(guards []entry[GuardFunc]) *shadowSet {
	var set *shadowSet
	for i := range guards {
		if r := guards[i].shadow; r != nil {
			if set == nil {
				set = &shadowSet{byPlugin: map[string][]ShadowRule{}}
			}
			set.byPlugin[r.Plugin] = append(set.byPlugin[r.Plugin], *r)
		}
	}
	return set
}

// mergedShadows caches the union of the deployment's shadow rules and a
// snapshot's declared ones, so that a call finds it with two loads.
type mergedShadows struct {
	deployed, declared, set *shadowSet
}

// shadowsFor is the shadow rules a call on snapshot s sees: the
// deployment's and those its plugins declared.
func (t *Tools) shadowsFor(s *snapshot) *shadowSet {
	d := t.shadows.Load()
	if s.declared == nil {
		return d
	}
	if d == nil {
		return s.declared
	}
	if m := t.merged.Load(); m != nil && m.deployed == d && m.declared == s.declared {
		return m.set
	}
	set := &shadowSet{byPlugin: map[string][]ShadowRule{}}
	for _, from := range []*shadowSet{d, s.declared} {
		for p, rs := range from.byPlugin {
			set.byPlugin[p] = append(set.byPlugin[p], rs...)
		}
	}
	t.merged.Store(&mergedShadows{deployed: d, declared: s.declared, set: set})
	return set
}

// mergedCache is where Tools keeps its mergedShadows.
type mergedCache = atomic.Pointer[mergedShadows]
