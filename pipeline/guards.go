package pipeline

import (
	"context"
	"fmt"
)

// guard runs the guards in registration order and reports the first denial.
// When two or more concurrent guards want the call, they run at once (see
// guardConcurrently). rec is nil on a call; Explain's recorder asks every
// guard, one after the other, to note each one's verdict.
func guard(ctx context.Context, s *snapshot, e *Execution, rec *recorder) (reason, who string) {
	if rec != nil {
		return rec.guard(ctx, s, e)
	}
	concurrent := 0
	for i := range s.guards {
		if g := &s.guards[i]; g.concurrent && g.wants(e.name) {
			concurrent++
		}
	}
	if concurrent >= 2 {
		return guardConcurrently(ctx, s, e, concurrent)
	}
	for i := range s.guards {
		g := &s.guards[i]
		if !g.wants(e.name) {
			continue
		}
		if reason, who := runGuard(ctx, g, e); who != "" {
			return reason, who
		}
	}
	return "", ""
}

// runGuard runs one guard; who is set when it denies (its failure too).
// A denial (or failure) of a guard in shadow is noted on e, not returned.
func runGuard(ctx context.Context, g *entry[GuardFunc], e *Execution) (reason, who string) {
	reason, who, rule := askGuard(ctx, g, e)
	return e.unlessShadow(g.owner, rule, reason, who)
}

// askGuard runs one guard: its verdict, and the rule it named when shadow
// rules concern its plugin (else "").
func askGuard(ctx context.Context, g *entry[GuardFunc], e *Execution) (reason, who, rule string) {
	ctx, note := e.guardContext(ctx, g.owner)
	said, err := callGuard(ctx, g.fn, e)
	reason, who = guardVerdictOf(g, said, err)
	return reason, who, note.get()
}

// guardVerdict is what one concurrent guard said: on done, or from wait
// for a started guard.
type guardVerdict struct {
	reason, who string
	done        chan struct{}
	wait        func() (string, error)
	// rule is the rule the guard named, and note where a started guard
	// tells it, when shadow rules concern its plugin.
	rule string
	note *ruleNote
}

// guardConcurrently starts every concurrent guard that wants the call but
// the first of those that are not started guards, then walks all the
// guards in registration order: an in-order guard, and that first one,
// run on this goroutine (while the others run), the other concurrent ones
// are waited for. A started guard (Registrar.StartedGuard) is started
// here, without a goroutine, and its wait called in its turn. The first
// denial in that order is the answer, as it would have been one by one;
// the guards after it are cancelled and waited for, so that none outlives
// the call. (The first runs here because this goroutine would only wait
// for it: a goroutine of its own cost a start and a wake-up per call.)
func guardConcurrently(ctx context.Context, s *snapshot, e *Execution, n int) (reason, who string) {
	gctx, cancel := context.WithCancel(ctx)
	verdicts := make([]guardVerdict, 0, n)
	first := -1
	for i := range s.guards {
		g := &s.guards[i]
		if !g.concurrent || !g.wants(e.name) {
			continue
		}
		switch {
		case g.start != nil:
			sctx, note := e.guardContext(gctx, g.owner)
			verdicts = append(verdicts, guardVerdict{wait: startGuard(sctx, g, e), note: note})
		case first < 0:
			first = i
		default:
			verdicts = append(verdicts, guardVerdict{done: make(chan struct{})})
			v := &verdicts[len(verdicts)-1]
			go func() {
				defer close(v.done)
				// Noted in the walk below, in registration order.
				v.reason, v.who, v.rule = askGuard(gctx, g, e)
			}()
		}
	}
	next := 0
	defer func() {
		cancel()
		for i := range verdicts {
			switch v := &verdicts[i]; {
			case v.done != nil:
				<-v.done
			case i >= next: // started, never waited for
				_, _ = v.wait()
			}
		}
	}()
	for i := range s.guards {
		g := &s.guards[i]
		if !g.wants(e.name) {
			continue
		}
		if g.concurrent && i != first {
			v := &verdicts[next]
			next++
			if v.wait != nil {
				reason, err := waitGuard(v.wait)
				v.reason, v.who = guardVerdictOf(g, reason, err)
				v.rule = v.note.get()
			} else {
				<-v.done
			}
			v.reason, v.who = e.unlessShadow(g.owner, v.rule, v.reason, v.who)
			if v.who != "" {
				return v.reason, v.who
			}
			continue
		}
		gc := ctx
		if i == first {
			gc = gctx
		}
		if reason, who := runGuard(gc, g, e); who != "" {
			return reason, who
		}
	}
	return "", ""
}

// startGuard starts a started guard; a panic in it fails the guard.
func startGuard(ctx context.Context, g *entry[GuardFunc], e *Execution) (wait func() (string, error)) {
	defer func() {
		if r := recover(); r != nil {
			err := fmt.Errorf("panic: %v", r)
			wait = func() (string, error) { return "", err }
		}
	}()
	return g.start(ctx, e)
}

// waitGuard waits for a started guard's verdict; a panic fails the guard.
func waitGuard(wait func() (string, error)) (reason string, err error) {
	defer recoverInto(&err)
	return wait()
}

// guardVerdictOf is runGuard's answer for what a guard said.
func guardVerdictOf(g *entry[GuardFunc], reason string, err error) (string, string) {
	if err != nil {
		return "guard of " + g.owner + " failed: " + errText(err), g.owner
	}
	if reason != "" {
		return reason, g.owner
	}
	return "", ""
}

func callGuard(ctx context.Context, fn GuardFunc, e *Execution) (reason string, err error) {
	defer recoverInto(&err)
	return fn(ctx, e)
}
