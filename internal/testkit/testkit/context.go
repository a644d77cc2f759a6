package testkit

import (
	"context"
	"testing"
	"time"
)

// Bound is the default bound of Context: a bound against a hang, not a
// measure, so it leaves room for the race detector on a loaded machine.
const Bound = time.Minute

// Context returns a context that ends after Bound or when the test's
// cleanup runs, whichever comes first.
func Context(t testing.TB) context.Context {
	t.Helper()
	return ContextFor(t, Bound)
}

// ContextFor is Context with a bound of d. The context does not derive from
// t.Context, which ends before the cleanups run: a cleanup may still use it
// to stop what the test started.
func ContextFor(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}
