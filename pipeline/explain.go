package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
)

// ErrNotAsked is what a listener returns, in a dry run, when it cannot
// answer one without acting (a remote plugin that did not declare dry-run
// support). Explain reports it as not asked and goes on as if it had
// passed; outside a dry run it is a failure like any other error.
var ErrNotAsked = errors.New("not asked (does not support explain)")

// Outcomes of an explained call, as Explanation.Outcome spells them.
const (
	WouldRun   = "ALLOWED"
	WouldAsk   = "ASK"
	WouldDeny  = string(CodeDenied)
	NoSuchTool = string(CodeUnknownTool)
	BadArgs    = string(CodeInvalidArguments)
)

// Step verdicts of an Explanation, one per listener.
const (
	StepAllow      = "allow"
	StepDeny       = "deny"
	StepAsk        = "ask"
	StepPass       = "pass"
	StepNoInterest = "no interest"
	StepNotAsked   = "not asked (does not support explain)"
	StepNotReached = "not reached"
	StepFailed     = "failed"
)

// Explanation is what Explain found: what each stage-1 listener and guard
// said, who decided, and the outcome the call would get.
type Explanation struct {
	// ID is the dry run's call id, as its listeners saw it.
	ID string `json:"id"`
	// Tool and Principal are what was explained.
	Tool      string `json:"tool"`
	Principal string `json:"principal"`
	// Owner is the plugin whose tool it is ("" when there is none).
	Owner string `json:"owner,omitempty"`
	// Outcome is ALLOWED (would run), ASK, DENIED, UNKNOWN_TOOL,
	// INVALID_ARGUMENTS, or TOOL_ERROR (the tool is missing while its
	// plugin restarts) or ABORTED (the caller gave up).
	Outcome string `json:"outcome"`
	// Reason says why, for every outcome but ALLOWED; the question, for ASK.
	Reason string `json:"reason,omitempty"`
	// DecidedBy is the plugin that decided (or "host" for stage 0); Rule
	// the rule it named, when it named one.
	DecidedBy string `json:"decided_by,omitempty"`
	Rule      string `json:"rule,omitempty"`
	// IfApproved is, for ASK, what the guards would make of the call once
	// approved: ALLOWED, or DENIED with IfApprovedBy and its reason.
	IfApproved       string `json:"if_approved,omitempty"`
	IfApprovedBy     string `json:"if_approved_by,omitempty"`
	IfApprovedRule   string `json:"if_approved_rule,omitempty"`
	IfApprovedReason string `json:"if_approved_reason,omitempty"`
	// Steps are the listeners of stages 1 and 2, in the order the pipeline
	// holds them.
	Steps []Step `json:"steps"`
}

// Step is one listener's part in an explained call.
type Step struct {
	// Stage is 1 (pre-execute) or 2 (guards).
	Stage int `json:"stage"`
	// Plugin is the plugin whose listener it is.
	Plugin string `json:"plugin"`
	// Verdict is one of the Step* constants.
	Verdict string `json:"verdict"`
	Reason  string `json:"reason,omitempty"`
	Rule    string `json:"rule,omitempty"`
	// Decided marks the listener whose answer is the outcome.
	Decided bool `json:"decided,omitempty"`
}

// ruleNote is where a guard run by Explain reports its rule (NoteRule):
// the guard's answer is a reason string, which has no room for it.
type ruleNote struct {
	mu   sync.Mutex
	rule string
}

type ruleNoteKey struct{}

// NoteRule tells an explained call which rule a guard's answer comes from
// (a remote guard's GuardResponse.rule). Outside Explain it does nothing.
func NoteRule(ctx context.Context, rule string) {
	if n, ok := ctx.Value(ruleNoteKey{}).(*ruleNote); ok && rule != "" {
		n.mu.Lock()
		n.rule = rule
		n.mu.Unlock()
	}
}

// Explain runs stages 0, 1 and 2 of a call as caller, for the principal ctx
// carries, with the dry-run mark set, and reports what every listener said
// and the outcome the call would get. Nothing executes: no approver is
// asked, stages 3 to 5 are not run (no observer, so no audit, sees it), and
// a listener whose plugin does not understand dry runs is not called
// (ErrNotAsked). Unlike Execute, every guard is asked, not only up to the
// first denial, so that each one's verdict is shown; the denial reported is
// still the first in registration order.
func (t *Tools) Explain(ctx context.Context, name string, args json.RawMessage, caller string) (x Explanation) {
	s := t.acquire()
	defer s.inflight.Add(-1)
	id, _ := t.nextID()
	e := &Execution{id: id, name: name, caller: caller, principal: PrincipalFrom(ctx), dryRun: true}
	x = Explanation{ID: id, Tool: name, Principal: e.principal.String(), Steps: []Step{}}
	defer func() {
		if p := recover(); p != nil {
			t.log.Error("explain panicked", "tool", name, "panic", p)
			x.Outcome, x.Reason, x.DecidedBy = string(CodeToolError), fmt.Sprintf("host error: %v", p), "host"
		}
	}()

	// Stage 0, as Execute has it.
	if len(s.holds) > 0 {
		h := s.holds[0]
		x.Outcome, x.Reason, x.DecidedBy = WouldDeny, h.reason, h.who
		return x
	}
	reg, ok := s.tools[name]
	if !ok {
		x.DecidedBy = "host"
		if why, ok := s.absent[name]; ok {
			x.Outcome, x.Reason = string(CodeToolError), why
			return x
		}
		x.Outcome, x.Reason = NoSuchTool, "no tool named "+name
		return x
	}
	x.Owner = reg.info.Owner
	e.tool = &reg.info
	if limit := t.argumentLimit(reg); len(args) > limit {
		x.Outcome, x.Reason, x.DecidedBy = BadArgs, oversized(len(args), limit, name).Message, "host"
		return x
	}
	canon, bad := checkArguments(reg, args)
	if bad != nil {
		x.Outcome, x.Reason, x.DecidedBy = BadArgs, bad.Message, "host"
		return x
	}
	e.args = canon

	// Stage 1: the chain, each listener's answer recorded.
	pre := make([]Step, len(s.pre))
	for i := range s.pre {
		pre[i] = Step{Stage: 1, Plugin: s.pre[i].owner, Verdict: StepNotReached}
	}
	d := t.explainDecide(ctx, s, e, 0, pre)
	decider := -1
	for i := range pre {
		switch pre[i].Verdict {
		case StepAllow, StepDeny, StepAsk, StepFailed:
			decider = i
		}
		if decider >= 0 {
			pre[i].Decided = true
			break
		}
	}
	x.Steps = append(x.Steps, pre...)
	if err := ctx.Err(); err != nil {
		x.Outcome, x.Reason = string(CodeAborted), "explain cancelled: "+err.Error()
		return x
	}
	if d.Verdict == VerdictDeny {
		x.Outcome, x.Reason, x.DecidedBy, x.Rule = WouldDeny, d.Reason, d.DecidedBy, d.Rule
		for i := range s.guards {
			x.Steps = append(x.Steps, Step{Stage: 2, Plugin: s.guards[i].owner, Verdict: StepNotReached})
		}
		return x
	}

	// Stage 2: every guard, one after the other.
	reason, who, rule := "", "", ""
	for i := range s.guards {
		g := &s.guards[i]
		st := Step{Stage: 2, Plugin: g.owner}
		if !g.wants(name) {
			st.Verdict = StepNoInterest
			x.Steps = append(x.Steps, st)
			continue
		}
		n := &ruleNote{}
		r, err := callGuard(context.WithValue(ctx, ruleNoteKey{}, n), g.fn, e)
		n.mu.Lock()
		st.Rule = n.rule
		n.mu.Unlock()
		switch {
		case errors.Is(err, ErrNotAsked):
			st.Verdict = StepNotAsked
		case err != nil:
			st.Verdict, st.Reason = StepFailed, "guard of "+g.owner+" failed: "+errText(err)
		case r != "":
			st.Verdict, st.Reason = StepDeny, r
		default:
			st.Verdict = StepPass
		}
		if who == "" && (st.Verdict == StepDeny || st.Verdict == StepFailed) {
			reason, who, rule = st.Reason, g.owner, st.Rule
			st.Decided = d.Verdict == VerdictAllow
		}
		x.Steps = append(x.Steps, st)
	}
	if err := ctx.Err(); err != nil {
		x.Outcome, x.Reason = string(CodeAborted), "explain cancelled: "+err.Error()
		return x
	}
	if d.Verdict == VerdictAsk {
		x.Outcome, x.Reason, x.DecidedBy, x.Rule = WouldAsk, d.Reason, d.DecidedBy, d.Rule
		x.IfApproved = WouldRun
		if who != "" {
			x.IfApproved, x.IfApprovedBy, x.IfApprovedRule, x.IfApprovedReason = WouldDeny, who, rule, reason
		}
		return x
	}
	if who != "" {
		x.Outcome, x.Reason, x.DecidedBy, x.Rule = WouldDeny, reason, who, rule
		return x
	}
	x.Outcome = WouldRun
	return x
}

// explainDecide is decide with every listener's answer recorded in steps
// (indexed as s.pre). A listener that handed back what next returned
// passed; one whose plugin cannot answer a dry run is not asked, and the
// chain goes on past it.
func (t *Tools) explainDecide(ctx context.Context, s *snapshot, e *Execution, i int, steps []Step) Decision {
	for i < len(s.pre) && !s.pre[i].wants(e.name) {
		steps[i].Verdict = StepNoInterest
		i++
	}
	if i == len(s.pre) {
		return Allow()
	}
	l := &s.pre[i]
	var inner Decision
	called := false
	next := func(ctx context.Context) Decision {
		called = true
		inner = t.explainDecide(ctx, s, e, i+1, steps)
		return inner
	}
	d, err := callPre(ctx, l.fn, e, next)
	st := &steps[i]
	switch {
	case errors.Is(err, ErrNotAsked):
		st.Verdict = StepNotAsked
		if !called {
			return next(ctx)
		}
		return inner
	case err != nil:
		st.Verdict, st.Reason = StepFailed, "pre-execute listener of "+l.owner+" failed: "+errText(err)
		return Decision{Verdict: VerdictDeny, Reason: st.Reason, DecidedBy: l.owner}
	case d.Verdict < VerdictAllow || d.Verdict > VerdictAsk:
		st.Verdict, st.Reason = StepFailed, fmt.Sprintf("pre-execute listener of %s returned an unknown decision (%d)", l.owner, d.Verdict)
		return Decision{Verdict: VerdictDeny, Reason: st.Reason, DecidedBy: l.owner}
	case called && d.Verdict == inner.Verdict && d.Reason == inner.Reason:
		st.Verdict = StepPass
		return inner
	}
	st.Verdict, st.Reason, st.Rule = verdictStep(d.Verdict), d.Reason, d.Rule
	if st.Verdict == StepAllow {
		st.Reason = ""
	}
	d.DecidedBy = l.owner
	return d
}

func verdictStep(v Verdict) string {
	switch v {
	case VerdictAllow:
		return StepAllow
	case VerdictDeny:
		return StepDeny
	}
	return StepAsk
}
