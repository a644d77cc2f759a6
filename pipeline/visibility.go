package pipeline

import (
	"context"
	"fmt"

	"github.com/plugkit-go/plugkit/kernel"
)

// The visibility question: for a principal and a tool, could any call of
// it be allowed or asked? A tool is hidden from a principal when the
// answer is no, and shown otherwise.
//
// It is answered by the stage code a call runs (lookup's table, decide,
// guard), as a dry run without arguments (Execution.Visibility), so there
// is no second copy of the rules. Each listener answers for every call of
// the tool by the principal: a stage-1 listener denies only when it would
// deny them all, whatever the arguments, and allows (or asks, or passes to
// next) otherwise; a guard names a reason only when it would deny them all.
// A listener that was not registered as one that answers (OnPreExecute
// rather than OnPreExecuteVisible), a remote plugin that does not declare
// it, a listener that fails or answers nonsense: each counts as one that
// may allow. So the property is a sound over-approximation: a tool a call
// could be allowed or asked for is never hidden; a hidden tool is one
// whose every call would be denied. It is exact when every listener on
// the tool's way answers exactly (the safety plugin's rules do for a rule
// without argument checks; a rule with argument checks counts as one that
// may allow, since some arguments pass it). A listener may say more: that
// its allow, ask or pass holds for any arguments (NoteAnyArguments, see
// anyargs.go); when every listener on the way says so, the answer is the
// outcome of every call of the tool by the principal (Visibility.Exact).
//
// A tool marked absent (its plugin restarting or failed) is asked about as
// it was registered, so that a hidden tool is answered as one that does not
// exist in every state of its plugin, and a shown one is told why it is
// missing.
//
// Two things are left out on purpose. A hold (a critical plugin down)
// denies every call while it lasts, but a list must not flicker with a
// restart, so it hides nothing. And the caller (the client's name) is not
// part of the question: a listener that decides by caller must answer "may
// allow" for it.

// Visibility is the answer to the visibility question for one tool.
type Visibility struct {
	Tool      string `json:"tool"`
	Principal string `json:"principal"`
	// Shown: some call of the tool by the principal could be allowed or
	// asked.
	Shown bool `json:"shown"`
	// DecidedBy, Rule and Reason say who hid the tool, for a hidden one
	// ("host" when there is no such tool).
	DecidedBy string `json:"decided_by,omitempty"`
	Rule      string `json:"rule,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Unanswered are the plugins whose listeners on the tool's way could
	// not answer and were counted as ones that may allow.
	Unanswered []string `json:"unanswered,omitempty"`
	// Exact: the answer holds for every call of the tool by the principal,
	// whatever its arguments (see NoteAnyArguments). A hidden tool's always
	// does; a shown tool's when every listener on its way answered for any
	// arguments, and then Outcome says what every such call would get.
	Exact bool `json:"exact"`
	// Outcome is, for a shown tool answered exactly, ALLOWED or ASK (then
	// DecidedBy, Rule and Reason are the Ask's); "" otherwise.
	Outcome string `json:"outcome,omitempty"`
	// DependsOnArguments are, for a shown tool, the listeners whose answer
	// depends on the arguments (or who could not answer): the plugin, with
	// the rule it named.
	DependsOnArguments []string `json:"depends_on_arguments,omitempty"`
	// Steps are the listeners of stages 1 and 2, as Explanation.Steps.
	Steps []Step `json:"steps"`
}

// Visible answers the visibility question for the tool called name and the
// principal ctx carries (see the note above).
func (t *Tools) Visible(ctx context.Context, name string) Visibility {
	s := t.acquire()
	defer s.inflight.Add(-1)
	return t.visible(ctx, s, PrincipalFrom(ctx), name)
}

func (t *Tools) visible(ctx context.Context, s *snapshot, p Principal, name string) (v Visibility) {
	v = Visibility{Tool: name, Principal: p.String(), Steps: []Step{}}
	defer func() {
		if r := recover(); r != nil {
			// A host bug must not hide a tool a call could reach.
			t.log.Error("visibility question panicked", "tool", name, "panic", r)
			v.Shown, v.DecidedBy, v.Reason = true, "", ""
		}
	}()
	// A held tool is asked about as any other: whether it is shown decides
	// whether a call of it is told why it is held or that it does not
	// exist.
	var info *ToolInfo
	if reg, ok := s.tools[name]; ok {
		info = &reg.info
	} else if a, ok := s.absent[name]; ok {
		// Missing for now (its plugin restarting or failed): asked about
		// as it was registered, so that its visibility does not change
		// with its plugin's state.
		info = &a.info
	} else {
		v.DecidedBy, v.Reason, v.Exact = "host", "no tool named "+name, true
		return v
	}
	// A rule in shadow hides nothing: its denial is not applied to a call
	// (unless a canary enforces it for p).
	e := &Execution{name: name, tool: info, principal: p, dryRun: true, visibility: true, shadows: t.shadowsFor(s)}
	rec := newRecorder(s)
	d := t.decide(ctx, s, e, 0, rec)
	v.Steps = append(v.Steps, rec.pre...)
	if d.Verdict == VerdictDeny {
		v.DecidedBy, v.Rule, v.Reason = d.DecidedBy, d.Rule, d.Reason
		v.Unanswered = unanswered(v.Steps)
		v.Exact = true
		return v
	}
	reason, who := guard(ctx, s, e, rec)
	v.Steps = append(v.Steps, rec.guards...)
	v.Unanswered = unanswered(v.Steps)
	if who != "" {
		v.DecidedBy, v.Rule, v.Reason = who, rec.rule, reason
		v.Exact = true
		return v
	}
	v.Shown = true
	if v.DependsOnArguments = dependsOn(v.Steps); len(v.DependsOnArguments) == 0 {
		// Every listener answered for any arguments: every call gets what
		// this one got.
		v.Exact, v.Outcome = true, WouldRun
		if d.Verdict == VerdictAsk {
			v.Outcome, v.DecidedBy, v.Rule, v.Reason = WouldAsk, d.DecidedBy, d.Rule, d.Reason
		}
	}
	return v
}

// unanswered lists, once each, the plugins of steps that did not answer.
func unanswered(steps []Step) []string {
	var out []string
	seen := map[string]bool{}
	for _, st := range steps {
		if (st.Verdict == StepNotAsked || st.Verdict == StepFailed) && !seen[st.Plugin] {
			seen[st.Plugin] = true
			out = append(out, st.Plugin)
		}
	}
	return out
}

// mayAllow is listener i's answer to the visibility question when it does
// not give one (it cannot, or it failed): Allow, so that nothing is hidden
// by a question nobody answered. It is only reached from Tools.visible,
// whose recorder notes why.
func (r *recorder) mayAllow(i int, verdict, reason string) Decision {
	if r != nil {
		r.pre[i].Verdict, r.pre[i].Reason = verdict, reason
	}
	return Allow()
}

// Listeners is what the visibility question would ask of the pipeline's
// listeners: for each stage-1 listener and guard, its plugin and whether
// it answers (host validate names those that do not).
func (t *Tools) Listeners() []ListenerInfo {
	s := t.acquire()
	defer s.inflight.Add(-1)
	out := make([]ListenerInfo, 0, len(s.pre)+len(s.guards))
	for i := range s.pre {
		out = append(out, ListenerInfo{Stage: 1, Plugin: s.pre[i].owner, AnswersVisibility: s.pre[i].visible})
	}
	for i := range s.guards {
		out = append(out, ListenerInfo{Stage: 2, Plugin: s.guards[i].owner, AnswersVisibility: s.guards[i].visible})
	}
	return out
}

// ListenerInfo describes one stage-1 listener or guard.
type ListenerInfo struct {
	Stage  int    `json:"stage"`
	Plugin string `json:"plugin"`
	// AnswersVisibility: it was registered as one that answers the
	// visibility question. A remote plugin's listeners are, and answer it
	// when the plugin declares so; see remote.
	AnswersVisibility bool `json:"answers_visibility"`
}

// OnPreExecuteVisible adds a stage-1 listener that also answers the
// visibility question (Execution.Visibility): called with it set and no
// arguments, fn denies only when it would deny every call of the tool by
// the principal, and allows, asks or calls next otherwise. It may also
// return ErrNotAsked, when it cannot tell: the pipeline then counts it as
// one that may allow.
func (r *Registrar) OnPreExecuteVisible(fn PreExecuteFunc, tools ...string) (*kernel.Effect, error) {
	e := newEntry(fn, r.s.Name(), tools)
	e.visible = true
	return r.s.Contribute(PointPreExecute, "", 0, e)
}

// GuardVisible adds a stage-2 guard that also answers the visibility
// question: called with it set and no arguments, fn names a reason only
// when it would deny every call of the tool by the principal.
func (r *Registrar) GuardVisible(fn GuardFunc, tools ...string) (*kernel.Effect, error) {
	e := newEntry(fn, r.s.Name(), tools)
	e.visible = true
	return r.s.Contribute(PointGuards, "", 0, e)
}

// StartedGuardVisible is StartedGuard for a guard that also answers the
// visibility question, as GuardVisible's.
func (r *Registrar) StartedGuardVisible(start GuardStart, tools ...string) (*kernel.Effect, error) {
	fn := func(ctx context.Context, e *Execution) (string, error) { return start(ctx, e)() }
	g := newEntry(GuardFunc(fn), r.s.Name(), tools)
	g.concurrent, g.start, g.visible = true, start, true
	return r.s.Contribute(PointGuards, "", 0, g)
}

// String is the answer in one line, for logs.
func (v Visibility) String() string {
	if v.Shown {
		return fmt.Sprintf("%s shown to %s", v.Tool, v.Principal)
	}
	return fmt.Sprintf("%s hidden from %s by %s: %s", v.Tool, v.Principal, v.DecidedBy, v.Reason)
}

type visibleOnlyKey struct{}

// WithVisibleOnly returns ctx whose calls (Tools.Execute) see only the
// tools shown to their principal: a call of a tool hidden from it is
// answered as a call of a tool that does not exist (UNKNOWN_TOOL, "no
// tool named NAME", decided by nobody), and its observers, audit and
// metrics see it so. Front ends that list tools per principal (MCP) set
// it, so that a hidden tool cannot be found by calling it. The check is a
// lookup in the principal's cached visible set.
func WithVisibleOnly(ctx context.Context) context.Context {
	return context.WithValue(ctx, visibleOnlyKey{}, true)
}

func visibleOnly(ctx context.Context) bool {
	v, _ := ctx.Value(visibleOnlyKey{}).(bool)
	return v
}
