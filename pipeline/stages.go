package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Execute runs one call through stages 0 to 5 as caller. It never fails and
// never panics: every outcome is a Result, and stage 5 sees each one once.
func (t *Tools) Execute(ctx context.Context, name string, args json.RawMessage, caller string) Result {
	start := time.Now()
	t.inflight.Add(1)
	defer t.inflight.Add(-1)
	s := t.acquire()
	defer s.inflight.Add(-1)
	id, seq := t.nextID()
	e := &Execution{id: id, name: name, caller: caller, principal: PrincipalFrom(ctx), shadows: t.shadowsFor(s), visibleOnly: visibleOnly(ctx)}
	var c clock
	ctx = c.begin(ctx, &t.opts, start, e, seq%t.opts.StageSample == 0)
	r := t.run(ctx, s, e, args, &c, start)
	r.ID = e.id
	r.Shadow = e.shadowed()
	end := time.Now()
	r.Duration = end.Sub(start)
	t.observe(c.enter(ctx, StageResult, end), s, e, r)
	c.end(&t.opts, e, &r)
	return r
}

func (t *Tools) run(ctx context.Context, s *snapshot, e *Execution, args json.RawMessage, c *clock, start time.Time) (r Result) {
	defer func() {
		// Every listener is contained on its own; this is the last line
		// against a host bug, and it fails closed.
		if p := recover(); p != nil {
			t.log.Error("pipeline panicked", "tool", e.name, "panic", p)
			r = Fail(CodeToolError, fmt.Sprintf("host error: %v", p))
		}
	}()
	base := ctx
	// Stage 0 takes no context: entering it only starts its clock and span.
	c.enter(base, StageLookup, start)
	reg, fail := t.lookup(s, e, args)
	if reg == nil {
		return fail
	}

	// Stage 1: pre-execute.
	ctx = c.enter(base, StagePreExecute, time.Time{})
	switch d := t.decide(ctx, s, e, 0, nil); d.Verdict {
	case VerdictAllow:
	case VerdictAsk:
		if r, ok := t.ask(ctx, s, e, d); !ok {
			return r
		}
	default:
		if err := ctx.Err(); err != nil {
			return aborted("before it ran", err, d.Reason)
		}
		return denied(d.Reason, d.DecidedBy)
	}

	// Stage 2: guards.
	ctx = c.enter(base, StageGuards, time.Time{})
	if reason, who := guard(ctx, s, e, nil); who != "" {
		if err := ctx.Err(); err != nil {
			return aborted("before it ran", err, reason)
		}
		return denied(reason, who)
	}
	if err := ctx.Err(); err != nil {
		return Fail(CodeAborted, "call cancelled before it ran: "+err.Error())
	}

	// Stage 3: execute; stage 4: post-execute, after every stage-3 outcome.
	ctx = c.enter(base, StageExecute, time.Time{})
	r = t.executeChain(ctx, s, e, reg, 0)
	if err := ctx.Err(); err != nil && r.Error != nil && r.Error.Code != CodeAborted {
		r = aborted("during execute", err, string(r.Error.Code)+": "+r.Error.Message)
	}
	return review(c.enter(base, StagePostExecute, time.Time{}), s, e, r)
}

// lookup is stage 0: a hold, the tool's lookup and its argument check. It
// returns the tool, or nil and the call's outcome. Execute and Explain
// both run it.
func (t *Tools) lookup(s *snapshot, e *Execution, args json.RawMessage) (*registered, Result) {
	if len(s.holds) > 0 {
		h := s.holds[0]
		return nil, denied(h.reason, h.who)
	}
	reg, ok := s.tools[e.name]
	if ok && e.visibleOnly && !t.visibleSet(context.Background(), s, e.principal).Has(e.name) {
		// A tool hidden from the principal is one that does not exist,
		// from here on, for the answer, the observers and the metrics.
		reg, ok = nil, false
	}
	// Arguments over their bound are refused before anything reads them,
	// observers included: a critical listener with a memory limit must not
	// be the one to find out.
	if limit := t.argumentLimit(reg); len(args) > limit {
		if ok {
			e.tool = &reg.info
		}
		return nil, Result{Error: oversized(len(args), limit, e.name)}
	}
	if !ok {
		// Observers see what was asked for, so that a record of the call
		// (an audit digest) is of its arguments, not of nothing.
		e.args = validJSON(args)
		if a, ok := s.absent[e.name]; ok && (!e.visibleOnly || t.visible(WithPrincipal(context.Background(), e.principal), s, e.principal, e.name).Shown) {
			// Why it is missing is said only to a caller it is shown to:
			// to anyone else it does not exist, restarting or not. Asked
			// here rather than cached: the visible sets are of the
			// registered tools, and such a call is rare.
			return nil, Fail(CodeToolError, a.reason)
		}
		return nil, Fail(CodeUnknownTool, "no tool named "+e.name)
	}
	if reg.info.Held != "" {
		e.args = validJSON(args)
		return nil, Fail(CodeUnknownTool, "tool "+e.name+" is held absent: "+reg.info.Held)
	}
	e.tool = &reg.info
	canon, bad := checkArguments(reg, args)
	if bad != nil {
		e.args = validJSON(args)
		return nil, Result{Error: bad}
	}
	e.args = canon
	return reg, Result{}
}

// aborted is the outcome of a call whose caller gave up while stage when
// is running. A listener's or wrapper's failure then is most likely the
// cancellation reaching it (a remote RPC fails with the call's context), so
// it is not its Deny and no plugin is blamed; what it said is kept in the
// message for whoever reads the record.
func aborted(when string, err error, last string) Result {
	return Fail(CodeAborted, "call cancelled "+when+": "+err.Error()+" (last outcome: "+last+")")
}

// decide runs the stage-1 chain from listener i; the default is Allow. rec
// is nil on a call; Explain's recorder notes each listener's answer, and
// then a listener that cannot answer a dry run (ErrNotAsked) is passed
// over, the chain going on past it.
func (t *Tools) decide(ctx context.Context, s *snapshot, e *Execution, i int, rec *recorder) Decision {
	for i < len(s.pre) && !s.pre[i].wants(e.name) {
		if rec != nil {
			rec.pre[i].Verdict = StepNoInterest
		}
		i++
	}
	if i == len(s.pre) {
		return Allow()
	}
	l := &s.pre[i]
	if e.visibility && !l.visible {
		return rec.mayAllow(i, StepNotAsked, "")
	}
	// inner keeps what next returned, for a shadow listener's answer to be
	// told from the inner chain's (see passOn); only when there are
	// shadow rules.
	var inner *innerDecision
	if e.shadows != nil {
		inner = &innerDecision{}
	}
	next := func(ctx context.Context) Decision {
		d := t.decide(ctx, s, e, i+1, rec)
		if rec != nil {
			rec.nextCalled(i, d)
		}
		inner.set(d)
		return d
	}
	// In a visibility question the listener may note that its answer holds
	// for any arguments (NoteAnyArguments), in a note of its own.
	lctx, note := withAnyArgsNote(ctx, e)
	d, err := callPre(lctx, l.fn, e, next)
	if note != nil && rec != nil {
		rec.pre[i].AnyArguments = note.noted()
	}
	switch {
	case err != nil && e.visibility:
		// A listener that cannot answer, or fails to, may allow: a tool is
		// never hidden by a question nobody answered.
		if errors.Is(err, ErrNotAsked) {
			return rec.mayAllow(i, StepNotAsked, "")
		}
		return rec.mayAllow(i, StepFailed, errText(err))
	case err != nil && e.dryRun && errors.Is(err, ErrNotAsked):
		return rec.notAsked(ctx, i, next)
	case err != nil:
		d = Decision{Verdict: VerdictDeny, Reason: "pre-execute listener of " + l.owner + " failed: " + errText(err), DecidedBy: l.owner}
		if e.shadowPre(l.owner, d) {
			rec.shadowed(i, StepShadowFailed, d)
			return inner.passOn(ctx, next)
		}
		rec.failed(i, d)
		return d
	case (d.Verdict < VerdictAllow || d.Verdict > VerdictAsk) && e.visibility:
		return rec.mayAllow(i, StepFailed, fmt.Sprintf("unknown decision (%d)", d.Verdict))
	case d.Verdict < VerdictAllow || d.Verdict > VerdictAsk:
		d = Decision{Verdict: VerdictDeny, Reason: fmt.Sprintf("pre-execute listener of %s returned an unknown decision (%d)", l.owner, d.Verdict), DecidedBy: l.owner}
		if e.shadowPre(l.owner, d) {
			rec.shadowed(i, StepShadowFailed, d)
			return inner.passOn(ctx, next)
		}
		rec.failed(i, d)
		return d
	}
	if d.DecidedBy == "" {
		d.DecidedBy = l.owner
	}
	if inner.own(d) && e.shadowPre(l.owner, d) {
		rec.shadowed(i, shadowStep(d.Verdict), d)
		return inner.passOn(ctx, next)
	}
	if rec != nil {
		rec.answered(i, d)
	}
	return d
}

func callPre(ctx context.Context, fn PreExecuteFunc, e *Execution, next DecideNext) (d Decision, err error) {
	defer recoverInto(&err)
	return fn(ctx, e, next)
}

// ask puts an Ask to the current approver. Only an explicit approval within
// the approval timeout proceeds; everything else is a denial saying why.
func (t *Tools) ask(ctx context.Context, s *snapshot, e *Execution, d Decision) (r Result, ok bool) {
	outcome := Approved
	if t.opts.OnApproval != nil {
		defer func() { t.opts.OnApproval(e.name, outcome) }()
	}
	a := s.approver
	if a == nil {
		outcome = NoApprover
		return denied("approval needed but no approver is registered: "+d.Reason, d.DecidedBy), false
	}
	// The approver reads the route the Ask named from the execution; it is
	// set before the approver's goroutine starts.
	e.askRoute = d.Route
	timeout := t.opts.ApprovalTimeout
	if t.opts.ApprovalTimeoutFor != nil {
		if d := t.opts.ApprovalTimeoutFor(e.name, d.Route); d > 0 {
			timeout = d
		}
	}
	actx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	type answer struct {
		ok  bool
		err error
	}
	ch := make(chan answer, 1)
	var ad *ApprovalDenied
	go func() {
		ok, err := callApprover(actx, a.fn, e, d.Reason)
		ch <- answer{ok, err}
	}()
	select {
	case ans := <-ch:
		switch {
		case ans.err != nil && ctx.Err() != nil:
			// The approver gave up because the call was cancelled: the
			// call is ABORTED, as when the cancellation is seen first.
			outcome = AskCancelled
			return Fail(CodeAborted, "call cancelled while waiting for approval: "+d.Reason), false
		case ans.err != nil && errors.As(ans.err, &ad):
			outcome = Refused
			if ad.TimedOut {
				outcome = ApprovalTimedOut
			}
			return denied(ad.Reason, a.owner), false
		case ans.err != nil:
			outcome = ApprovalFailed
			return denied("approver "+a.owner+" failed: "+errText(ans.err)+" (asked: "+d.Reason+")", a.owner), false
		case !ans.ok:
			outcome = Refused
			return denied("approver "+a.owner+" refused: "+d.Reason, a.owner), false
		}
		return Result{}, true
	case <-actx.Done():
		if ctx.Err() != nil {
			outcome = AskCancelled
			return Fail(CodeAborted, "call cancelled while waiting for approval: "+d.Reason), false
		}
		outcome = ApprovalTimedOut
		return denied(fmt.Sprintf("approval timed out after %s: %s", timeout, d.Reason), a.owner), false
	}
}

func callApprover(ctx context.Context, fn ApproverFunc, e *Execution, reason string) (ok bool, err error) {
	defer recoverInto(&err)
	return fn(ctx, e, reason)
}

// executeChain runs the stage-3 chain from wrapper i; the default calls the
// tool's body.
func (t *Tools) executeChain(ctx context.Context, s *snapshot, e *Execution, reg *registered, i int) Result {
	for i < len(s.exec) && !s.exec[i].wants(e.name) {
		i++
	}
	if i == len(s.exec) {
		return callTool(ctx, reg, e)
	}
	l := &s.exec[i]
	return callExec(ctx, l, e, func(ctx context.Context) Result { return t.executeChain(ctx, s, e, reg, i+1) })
}

func callExec(ctx context.Context, l *entry[ExecuteFunc], e *Execution, next ExecuteNext) (r Result) {
	defer func() {
		if p := recover(); p != nil {
			r = Fail(CodeToolError, fmt.Sprintf("execute listener of %s failed: panic: %v", l.owner, p))
		}
	}()
	return l.fn(ctx, e, next).normalize("execute listener of " + l.owner).decidedBy(l.owner)
}

// callTool runs the body. The caller's cancellation is ABORTED; an *Error
// keeps its code; any other error or a panic is TOOL_ERROR.
func callTool(ctx context.Context, reg *registered, e *Execution) (r Result) {
	// Reading the error runs the plugin's code too (Error, As), so it is
	// inside the recover: a wrapper may run this on its own goroutine,
	// where an escaping panic would end the host.
	defer func() {
		if p := recover(); p != nil {
			r = Fail(CodeToolError, fmt.Sprintf("tool %s panicked: %v", e.name, p))
		}
	}()
	v, err := reg.body(ctx, e)
	if err == nil {
		return OK(v)
	}
	if cerr := ctx.Err(); cerr != nil {
		return Fail(CodeAborted, "call cancelled: "+cerr.Error())
	}
	var pe *Error
	if errors.As(err, &pe) && pe != nil {
		return Fail(pe.Code, pe.Message).normalize("tool " + e.name).decidedBy(reg.info.Owner)
	}
	return Fail(CodeToolError, errText(err))
}

// validJSON returns args as a string when they are JSON, "" otherwise.
func validJSON(args json.RawMessage) string {
	if json.Valid(args) {
		return string(args)
	}
	return ""
}

// review runs the stage-4 chain over r and applies its answer.
func review(ctx context.Context, s *snapshot, e *Execution, r Result) Result {
	if len(s.post) == 0 {
		return r
	}
	if ctx.Err() != nil {
		// The caller gave up (ABORTED): the listeners still review the
		// outcome, and must not fail for the caller's cancelled context
		// (a remote listener's RPC would, and BLOCKED would hide ABORTED).
		ctx = context.WithoutCancel(ctx)
	}
	rv := reviewChain(ctx, s, e, r, 0)
	switch rv.Action {
	case ReviewAccept:
		return r
	case ReviewReplace:
		r.Value = rv.Value
		return r
	default:
		b := Fail(CodeBlocked, rv.Feedback)
		b.DecidedBy = rv.DecidedBy
		return b
	}
}

func reviewChain(ctx context.Context, s *snapshot, e *Execution, r Result, i int) Review {
	for i < len(s.post) && !s.post[i].wants(e.name) {
		i++
	}
	if i == len(s.post) {
		return Accept()
	}
	l := &s.post[i]
	rv, err := callPost(ctx, l.fn, e, r, func(ctx context.Context) Review { return reviewChain(ctx, s, e, r, i+1) })
	switch {
	case err != nil:
		return Review{Action: ReviewBlock, Feedback: "post-execute listener of " + l.owner + " failed: " + errText(err), DecidedBy: l.owner}
	case rv.Action < ReviewAccept || rv.Action > ReviewBlock:
		return Review{Action: ReviewBlock, Feedback: fmt.Sprintf("post-execute listener of %s returned an unknown review (%d)", l.owner, rv.Action), DecidedBy: l.owner}
	}
	if rv.DecidedBy == "" {
		rv.DecidedBy = l.owner
	}
	return rv
}

func callPost(ctx context.Context, fn PostExecuteFunc, e *Execution, r Result, next ReviewNext) (rv Review, err error) {
	defer recoverInto(&err)
	return fn(ctx, e, r, next)
}

// observe runs stage 5: every observer once, each contained.
func (t *Tools) observe(ctx context.Context, s *snapshot, e *Execution, r Result) {
	if len(s.result) == 0 {
		return
	}
	if ctx.Err() != nil {
		// The caller gave up, but the record of the call must still be made.
		ctx = context.WithoutCancel(ctx)
	}
	for i := range s.result {
		o := &s.result[i]
		if !o.wants(e.name) {
			continue
		}
		if err := callObserver(ctx, o.fn, e, r); err != nil {
			t.log.Error("result observer failed", "plugin", o.owner, "tool", e.name, "error", errText(err))
		}
	}
}

func callObserver(ctx context.Context, fn ResultFunc, e *Execution, r Result) (err error) {
	defer recoverInto(&err)
	return fn(ctx, e, r)
}

// errText is err's message. A plugin's error is plugin code: an Error
// method that panics gives a message saying so instead of a panic.
func errText(err error) (s string) {
	defer func() {
		if p := recover(); p != nil {
			s = fmt.Sprintf("(%T whose Error method panicked: %v)", err, p)
		}
	}()
	return err.Error()
}

// recoverInto turns a panic in a listener into its error.
func recoverInto(err *error) {
	if p := recover(); p != nil {
		*err = fmt.Errorf("panic: %v", p)
	}
}
