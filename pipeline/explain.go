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
	// A listener in shadow (ShadowRule): what it would have done, which
	// the call does not do.
	StepShadowDeny   = "shadow deny"
	StepShadowAsk    = "shadow ask"
	StepShadowFailed = "shadow failed"
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
	// Route is, for ASK, the approval route the question goes to: the one
	// the Ask named (Decision.Route), which the host resolves to the route
	// it would take ("caller" for the calling client); Approvers are that
	// route's approver selectors.
	Route     string   `json:"route,omitempty"`
	Approvers []string `json:"approvers,omitempty"`
	// Steps are the listeners of stages 1 and 2, in the order the pipeline
	// holds them.
	Steps []Step `json:"steps"`
	// Shadow is what listeners in shadow would have decided, as the call's
	// audit line would record it.
	Shadow []ShadowDecision `json:"shadow,omitempty"`
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
	// AnyArguments marks, in a visibility question, a listener that said
	// its answer holds for every argument set (NoteAnyArguments).
	AnyArguments bool `json:"any_arguments,omitempty"`
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
// and the outcome the call would get. It runs the stage functions a call
// runs (lookup, decide, guard), with a recorder noting each listener's
// answer. Nothing executes: no approver is asked, stages 3 to 5 are not run
// (no observer, so no audit, sees it), and a listener whose plugin does not
// understand dry runs is not called (ErrNotAsked). Unlike Execute, every
// guard is asked, not only up to the first denial, so that each one's
// verdict is shown; the denial reported is still the first in registration
// order.
func (t *Tools) Explain(ctx context.Context, name string, args json.RawMessage, caller string) (x Explanation) {
	s := t.acquire()
	defer s.inflight.Add(-1)
	id, _ := t.nextID()
	e := &Execution{id: id, name: name, caller: caller, principal: PrincipalFrom(ctx), dryRun: true, shadows: t.shadowsFor(s)}
	x = Explanation{ID: id, Tool: name, Principal: e.principal.String(), Steps: []Step{}}
	defer func() { x.Shadow = e.shadowed() }()
	defer func() {
		if p := recover(); p != nil {
			t.log.Error("explain panicked", "tool", name, "panic", p)
			x.Outcome, x.Reason, x.DecidedBy = string(CodeToolError), fmt.Sprintf("host error: %v", p), "host"
		}
	}()

	// Stage 0.
	if reg, ok := s.tools[name]; ok && len(s.holds) == 0 {
		x.Owner = reg.info.Owner
	}
	if reg, r := t.lookup(s, e, args); reg == nil {
		x.Outcome, x.Reason, x.DecidedBy = string(r.Error.Code), r.Error.Message, r.DecidedBy
		if x.DecidedBy == "" {
			x.DecidedBy = "host"
		}
		return x
	}

	// Stage 1: the chain, each listener's answer recorded.
	rec := newRecorder(s)
	d := t.decide(ctx, s, e, 0, rec)
	for i := range rec.pre {
		if v := rec.pre[i].Verdict; v == StepAllow || v == StepDeny || v == StepAsk || v == StepFailed {
			rec.pre[i].Decided = true
			break
		}
	}
	x.Steps = append(x.Steps, rec.pre...)
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
	reason, who := guard(ctx, s, e, rec)
	if who != "" && d.Verdict == VerdictAllow {
		rec.guards[rec.decider].Decided = true
	}
	x.Steps = append(x.Steps, rec.guards...)
	if err := ctx.Err(); err != nil {
		x.Outcome, x.Reason = string(CodeAborted), "explain cancelled: "+err.Error()
		return x
	}
	if d.Verdict == VerdictAsk {
		x.Outcome, x.Reason, x.DecidedBy, x.Rule, x.Route = WouldAsk, d.Reason, d.DecidedBy, d.Rule, d.Route
		x.IfApproved = WouldRun
		if who != "" {
			x.IfApproved, x.IfApprovedBy, x.IfApprovedRule, x.IfApprovedReason = WouldDeny, who, rec.rule, reason
		}
		return x
	}
	if who != "" {
		x.Outcome, x.Reason, x.DecidedBy, x.Rule = WouldDeny, reason, who, rec.rule
		return x
	}
	x.Outcome = WouldRun
	return x
}

// recorder is what Explain keeps of a dry run while the stage functions run
// it (decide, guard): each listener's step. A call's recorder is nil, and
// the stage functions then note nothing.
type recorder struct {
	// pre is one step per stage-1 listener, indexed as snapshot.pre;
	// called and inner say whether its next was called and what that
	// returned (a listener that hands it back passed).
	pre    []Step
	called []bool
	inner  []Decision
	// guards are the stage-2 steps; decider indexes the first that denied
	// (or failed), and rule is that guard's rule.
	guards  []Step
	decider int
	rule    string
}

func newRecorder(s *snapshot) *recorder {
	r := &recorder{pre: make([]Step, len(s.pre)), called: make([]bool, len(s.pre)), inner: make([]Decision, len(s.pre))}
	for i := range s.pre {
		r.pre[i] = Step{Stage: 1, Plugin: s.pre[i].owner, Verdict: StepNotReached}
	}
	return r
}

// nextCalled notes that listener i's next returned d.
func (r *recorder) nextCalled(i int, d Decision) { r.called[i], r.inner[i] = true, d }

// notAsked notes that listener i cannot answer a dry run; the chain goes on
// past it (or has, if it called next first).
func (r *recorder) notAsked(ctx context.Context, i int, next DecideNext) Decision {
	r.pre[i].Verdict = StepNotAsked
	if !r.called[i] {
		return next(ctx)
	}
	return r.inner[i]
}

// failed notes that listener i failed, denying with d. It does nothing on a
// call (nil recorder).
func (r *recorder) failed(i int, d Decision) {
	if r != nil {
		r.pre[i].Verdict, r.pre[i].Reason = StepFailed, d.Reason
	}
}

// answered notes listener i's answer d: a pass when it is what its next
// returned, else its own verdict.
func (r *recorder) answered(i int, d Decision) {
	st := &r.pre[i]
	if r.called[i] && d.Verdict == r.inner[i].Verdict && d.Reason == r.inner[i].Reason {
		st.Verdict = StepPass
		return
	}
	st.Verdict, st.Reason, st.Rule = verdictStep(d.Verdict), d.Reason, d.Rule
	if st.Verdict == StepAllow {
		st.Reason = ""
	}
}

// guard is stage 2 of a dry run: every guard that wants the call is asked,
// one after the other, each verdict noted with the rule it named
// (NoteRule); the answer is the first denial, as a call's.
func (r *recorder) guard(ctx context.Context, s *snapshot, e *Execution) (reason, who string) {
	r.guards = make([]Step, 0, len(s.guards))
	for i := range s.guards {
		g := &s.guards[i]
		st := Step{Stage: 2, Plugin: g.owner}
		if !g.wants(e.name) {
			st.Verdict = StepNoInterest
			r.guards = append(r.guards, st)
			continue
		}
		if e.visibility && !g.visible {
			// A guard that cannot answer the visibility question may pass.
			st.Verdict = StepNotAsked
			r.guards = append(r.guards, st)
			continue
		}
		n := &ruleNote{}
		gctx, note := withAnyArgsNote(context.WithValue(ctx, ruleNoteKey{}, n), e)
		said, err := callGuard(gctx, g.fn, e)
		n.mu.Lock()
		st.Rule = n.rule
		n.mu.Unlock()
		st.AnyArguments = note.noted()
		denial, by := guardVerdictOf(g, said, err)
		switch {
		case errors.Is(err, ErrNotAsked):
			st.Verdict = StepNotAsked
			by = ""
		case err != nil && e.visibility:
			// A guard that fails to answer may pass: it hides nothing.
			st.Verdict, st.Reason = StepFailed, denial
			by = ""
		case by != "" && e.inShadow(g.owner, st.Rule, who == "", denial):
			st.Verdict, st.Reason = StepShadowDeny, denial
			if err != nil {
				st.Verdict = StepShadowFailed
			}
			by = ""
		case err != nil:
			st.Verdict, st.Reason = StepFailed, denial
		case by != "":
			st.Verdict, st.Reason = StepDeny, denial
		default:
			st.Verdict = StepPass
		}
		if who == "" && by != "" {
			reason, who, r.rule, r.decider = denial, by, st.Rule, len(r.guards)
		}
		r.guards = append(r.guards, st)
	}
	return reason, who
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
