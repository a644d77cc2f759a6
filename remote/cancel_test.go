package remote_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
)

// TestCancelledCallThroughRemoteListenersIsAborted: a caller that gives up
// while a remote pre-execute listener or guard is answering makes their RPC
// fail with the call's context. That failure is the cancellation, not the
// listener's Deny: the caller, stage 5 and the audit log all see ABORTED,
// blaming no plugin, wherever the cancel lands.
func TestCancelledCallThroughRemoteListenersIsAborted(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{echoTool("t")}}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{
		Name: "safety",
		Pre: []conformance.PreSpec{{Behaviour: conformance.PreDenyWhenNegative, Field: "n", Reason: "negative",
			Sleep: 50 * time.Millisecond}},
		Guards: []conformance.GuardSpec{{Behaviour: conformance.GuardSilent, Sleep: 50 * time.Millisecond}},
	}, pluginConfig{})
	wantOK(t, call(ctx, h, "t", `{"n":1}`), `{"n":1}`)

	// The listener and the guard take 100ms together: each cancel lands
	// before the call can end by itself, in stage 1 or stage 2.
	for _, after := range []time.Duration{0, time.Millisecond, 20 * time.Millisecond, 70 * time.Millisecond} {
		for try := range 3 {
			t.Run(fmt.Sprintf("cancel_after_%v_%d", after, try), func(t *testing.T) {
				cctx, cancel := context.WithCancel(ctx)
				done := make(chan pipeline.Result, 1)
				go func() { done <- call(cctx, h, "t", `{"n":1}`) }()
				time.Sleep(after)
				cancel()
				r := <-done
				wantCode(t, r, pipeline.CodeAborted)
				if r.DecidedBy != "" {
					t.Errorf("decided_by = %q, want no plugin blamed", r.DecidedBy)
				}
				var rec conformance.AuditRecord
				eventually(t, "the call's audit record", 10*time.Second, func() bool {
					for _, a := range h.audit.Records() {
						if a.ID == r.ID {
							rec = a
							return true
						}
					}
					return false
				})
				if rec.Code != pipeline.CodeAborted || rec.DecidedBy != "" {
					t.Errorf("audit recorded %s decided by %q, want ABORTED by no one", rec.Code, rec.DecidedBy)
				}
			})
		}
	}
}
