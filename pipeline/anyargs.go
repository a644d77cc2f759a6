package pipeline

import (
	"context"
	"strconv"
	"sync"
)

// A listener answering the visibility question (a dry run without
// arguments) says one of three things of every call of the tool by the
// principal: it denies them all (a Deny, or a guard's reason), it answers
// them all as it answered now (NoteAnyArguments: it allows, asks or passes
// to next whatever the arguments), or its answer depends on the arguments
// (anything else, which is what a listener that says nothing says). The
// second lets `host replay` judge a recorded call without its arguments as
// allowed or asked; the third is never taken for an allow.

// anyArgsNote is where one listener's NoteAnyArguments lands: each
// listener of a visibility question is called with a note of its own.
type anyArgsNote struct {
	mu  sync.Mutex
	set bool
}

type anyArgsKey struct{}

// NoteAnyArguments tells a visibility question (Execution.Visibility) that
// the calling listener's answer holds for every call of the tool by the
// principal, whatever its arguments: the Allow or Ask it returns, or, for
// a listener that returns what next returned, its passing. A Deny in a
// visibility question already says so and needs no note. Outside a
// visibility question it does nothing.
func NoteAnyArguments(ctx context.Context) {
	if n, ok := ctx.Value(anyArgsKey{}).(*anyArgsNote); ok {
		n.mu.Lock()
		n.set = true
		n.mu.Unlock()
	}
}

// withAnyArgsNote gives a listener of a visibility question a note of its
// own (shadowing the one of the listener whose next it is called from);
// nil and ctx unchanged outside one.
func withAnyArgsNote(ctx context.Context, e *Execution) (context.Context, *anyArgsNote) {
	if !e.visibility {
		return ctx, nil
	}
	n := &anyArgsNote{}
	return context.WithValue(ctx, anyArgsKey{}, n), n
}

// noted reports whether the listener called NoteAnyArguments.
func (n *anyArgsNote) noted() bool {
	if n == nil {
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.set
}

// argumentFree reports whether st, a step of a visibility question whose
// tool was shown, answered the same for every argument set: it had no
// interest in the tool or was not reached (decided by the name alone, or
// not on the way), it is in shadow (its answer is not applied), or it
// noted so.
func argumentFree(st Step) bool {
	switch st.Verdict {
	case StepNoInterest, StepNotReached, StepShadowDeny, StepShadowAsk, StepShadowFailed:
		return true
	case StepAllow, StepAsk, StepPass:
		return st.AnyArguments
	}
	return false
}

// dependsOn lists, once each, the listeners of steps whose answer depends
// on the arguments ("safety", or "safety rule \"tmp\"" when it named a
// rule), for a shown tool.
func dependsOn(steps []Step) []string {
	var out []string
	seen := map[string]bool{}
	for _, st := range steps {
		if argumentFree(st) {
			continue
		}
		who := st.Plugin
		if st.Rule != "" {
			who += " rule " + strconv.Quote(st.Rule)
		}
		if !seen[who] {
			seen[who] = true
			out = append(out, who)
		}
	}
	return out
}
