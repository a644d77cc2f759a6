package pipeline

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// Shadow mode: a listener (a whole plugin's stage-1 listeners and guards,
// or one named rule of a plugin) is evaluated on every call as usual, but
// its Deny, Ask or failure is not applied. The host enforces it, so a
// plugin need not know it is in shadow: the pipeline notes what the
// listener would have decided on the call's Result (Result.Shadow), for
// the audit line and the metrics, and goes on as if it had passed. Calls
// and explained calls share this code (decide, guard), so that `host
// explain` shows what a call does.

// ShadowRule puts Plugin's stage-1 and stage-2 answers in shadow mode:
// all of them when Rule is "", else only those naming Rule
// (Decision.Rule, a guard's rule). EnforceFor, when set, is a canary: the
// principals it selects (identity.Principal.Matches) have the rule
// enforced, everyone else has it in shadow.
type ShadowRule struct {
	Plugin     string
	Rule       string
	EnforceFor []string
}

// ShadowDecision is what a shadow listener would have decided on a call:
// the contract's value (wire.ShadowDecision), which stage-5 observers
// receive as it is. Stage is 1 (pre-execute) or 2 (guards); Would is
// DENIED or ASK (a failure of the listener would have denied the call:
// DENIED, with the failure as Reason).
type ShadowDecision = wire.ShadowDecision

// shadowSet is the shadow rules by plugin; nil when there are none, which
// costs a call nothing.
type shadowSet struct {
	byPlugin map[string][]ShadowRule
}

// SetShadow replaces the shadow rules; nil or empty ends shadow mode. A
// call sees the rules that were in place when it started.
func (t *Tools) SetShadow(rules []ShadowRule) error {
	if len(rules) == 0 {
		t.shadows.Store(nil)
		return nil
	}
	set := &shadowSet{byPlugin: map[string][]ShadowRule{}}
	for _, r := range rules {
		if r.Plugin == "" {
			return fmt.Errorf("shadow rule %q names no plugin", r.Rule)
		}
		set.byPlugin[r.Plugin] = append(set.byPlugin[r.Plugin], ShadowRule{Plugin: r.Plugin, Rule: r.Rule, EnforceFor: slices.Clone(r.EnforceFor)})
	}
	t.shadows.Store(set)
	return nil
}

// Shadow returns the deployment's shadow rules (SetShadow); the rules
// plugins registered in shadow themselves (shadow_declared.go) are not
// among them.
func (t *Tools) Shadow() []ShadowRule {
	set := t.shadows.Load()
	if set == nil {
		return nil
	}
	var out []ShadowRule
	for _, rs := range set.byPlugin {
		out = append(out, rs...)
	}
	slices.SortFunc(out, func(a, b ShadowRule) int {
		if a.Plugin != b.Plugin {
			return cmp.Compare(a.Plugin, b.Plugin)
		}
		return cmp.Compare(a.Rule, b.Rule)
	})
	return out
}

// concerns reports whether shadow rules concern plugin: then its guards
// are asked which rule they answer for.
func (s *shadowSet) concerns(plugin string) bool {
	return s != nil && len(s.byPlugin[plugin]) > 0
}

// applies reports whether plugin's answer for rule on a call for p is in
// shadow: a rule for the whole plugin or for that rule, whose canary (if
// any) does not select p.
func (s *shadowSet) applies(plugin, rule string, p Principal) bool {
	if s == nil {
		return false
	}
	for _, r := range s.byPlugin[plugin] {
		if r.Rule != "" && r.Rule != rule {
			continue
		}
		if slices.ContainsFunc(r.EnforceFor, p.Matches) {
			continue // the canary: enforced for p
		}
		return true
	}
	return false
}

// shadowNotes collects a call's shadow decisions; guards that run at once
// may add to it together.
type shadowNotes struct {
	mu   sync.Mutex
	list []ShadowDecision
}

func (e *Execution) noteShadow(d ShadowDecision) {
	e.shadowNotes.mu.Lock()
	e.shadowNotes.list = append(e.shadowNotes.list, d)
	e.shadowNotes.mu.Unlock()
}

// shadowed returns the call's shadow decisions, stage 1's first, then
// the guards' in registration order.
func (e *Execution) shadowed() []ShadowDecision {
	e.shadowNotes.mu.Lock()
	defer e.shadowNotes.mu.Unlock()
	if len(e.shadowNotes.list) == 0 {
		return nil
	}
	return slices.Clone(e.shadowNotes.list)
}

// shadowPre reports whether stage-1 listener owner's own answer d (a Deny,
// an Ask, or its failure as a Deny) is in shadow for the call, and notes
// it if so.
func (e *Execution) shadowPre(owner string, d Decision) bool {
	if e.shadows == nil || d.Verdict == VerdictAllow || !e.shadows.applies(owner, d.Rule, e.principal) {
		return false
	}
	would := WouldDeny
	if d.Verdict == VerdictAsk {
		would = WouldAsk
	}
	e.noteShadow(ShadowDecision{Stage: 1, Plugin: owner, Rule: d.Rule, Would: would, Reason: d.Reason})
	return true
}

// unlessShadow is a guard's verdict for the call: "" for a denial (or
// failure) of owner's rule in shadow, which it notes.
func (e *Execution) unlessShadow(owner, rule, reason, who string) (string, string) {
	if who != "" && e.shadowGuard(owner, rule, reason) {
		return "", ""
	}
	return reason, who
}

// shadowGuard reports whether guard owner's denial (or failure) for rule
// is in shadow for the call, and notes it if so.
func (e *Execution) shadowGuard(owner, rule, reason string) bool {
	if e.shadows == nil || !e.shadows.applies(owner, rule, e.principal) {
		return false
	}
	e.noteShadow(ShadowDecision{Stage: 2, Plugin: owner, Rule: rule, Would: WouldDeny, Reason: reason})
	return true
}

// guardContext is ctx with room for the guard's rule (NoteRule) when
// shadow rules concern the guard's plugin; else ctx and nil.
func (e *Execution) guardContext(ctx context.Context, owner string) (context.Context, *ruleNote) {
	if !e.shadows.concerns(owner) {
		return ctx, nil
	}
	n := &ruleNote{}
	return context.WithValue(ctx, ruleNoteKey{}, n), n
}

func (n *ruleNote) get() string {
	if n == nil {
		return ""
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.rule
}

// innerDecision is what a stage-1 listener's next returned, kept when
// shadow rules are in force; its methods take a nil one (no shadow rules).
// A remote wrapper's next runs on another goroutine, hence the lock.
type innerDecision struct {
	mu     sync.Mutex
	called bool
	d      Decision
}

func (in *innerDecision) set(d Decision) {
	if in == nil {
		return
	}
	in.mu.Lock()
	in.called, in.d = true, d
	in.mu.Unlock()
}

// own reports whether d is the listener's own answer, not the inner
// chain's handed back (which is the inner listener's to be in shadow).
func (in *innerDecision) own(d Decision) bool {
	if in == nil {
		return false
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return !in.called || d.Verdict != in.d.Verdict || d.Reason != in.d.Reason
}

// passOn is the chain's answer when the listener's is in shadow: as if it
// had passed, what its next returned, or returns now.
func (in *innerDecision) passOn(ctx context.Context, next DecideNext) Decision {
	in.mu.Lock()
	called, d := in.called, in.d
	in.mu.Unlock()
	if called {
		return d
	}
	return next(ctx)
}

// shadowed notes listener i's answer d, in shadow, as step verdict v. It
// does nothing on a call (nil recorder).
func (r *recorder) shadowed(i int, v string, d Decision) {
	if r != nil {
		r.pre[i].Verdict, r.pre[i].Reason, r.pre[i].Rule = v, d.Reason, d.Rule
	}
}

func shadowStep(v Verdict) string {
	if v == VerdictAsk {
		return StepShadowAsk
	}
	return StepShadowDeny
}

// inShadow is shadowGuard for Explain, which asks the guards past the
// first denial too: their shadow decisions are noted only while note is
// true (no guard has denied yet), as a call, which stops there, would.
func (e *Execution) inShadow(owner, rule string, note bool, reason string) bool {
	if note {
		return e.shadowGuard(owner, rule, reason)
	}
	return e.shadows != nil && e.shadows.applies(owner, rule, e.principal)
}
