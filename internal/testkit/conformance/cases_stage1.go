package conformance

import (
	"testing"
	"time"
)

// asker is a plugin whose stage-1 listener asks "really?".
var asker = PluginSpec{Name: "asker", Pre: []PreSpec{{Behaviour: PreAsk, Reason: "really?"}}}

// approver is a plugin named name whose approver behaves as b, logging to
// log.
func approver(name string, b Approve, log string) PluginSpec {
	return PluginSpec{Name: name, Approver: &ApproverSpec{Behaviour: b, Reason: name + " is unavailable", Log: log}}
}

// 6. A listener denies when a<0: add {a:1,b:2} → ok 3; add {a:-1,b:2} →
// DENIED with the listener's reason, and the tool body did not run.
func case06(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	const reason = "a must not be negative"
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
		PluginSpec{Name: "policy", Pre: []PreSpec{{Behaviour: PreDenyWhenNegative, Field: "a", Reason: reason}}},
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":1,"b":2}`), "3")
	r := host.Execute(ctx, "add", `{"a":-1,"b":2}`)
	wantDenied(t, r, "policy")
	if r.Error.Message != reason {
		t.Errorf("reason = %q, want the listener's %q", r.Error.Message, reason)
	}
	wantLog(t, host, "body", "run", "done") // the first call only
}

// 7. A listener that only calls next → the call succeeds.
func case07(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		PluginSpec{Name: "passer", Pre: []PreSpec{{Behaviour: PrePass, Log: "pre"}}},
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantLog(t, host, "pre", "called")
}

// 8. L1 (outer) denies without calling next → L2 never runs.
func case08(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
		PluginSpec{Name: "outer", Pre: []PreSpec{{Behaviour: PreDenyAll, Reason: "outer says no", Log: "outer"}}},
		PluginSpec{Name: "inner", Pre: []PreSpec{{Behaviour: PrePass, Log: "inner"}}},
	)
	wantDenied(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "outer", "outer says no")
	wantLog(t, host, "outer", "called")
	wantLog(t, host, "inner")
	wantLog(t, host, "body")
}

// 9. L1 calls next, gets L2's Deny, returns Allow → the call proceeds (veto
// chain, not monotonic).
func case09(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		PluginSpec{Name: "outer", Pre: []PreSpec{{Behaviour: PreOverrideAllow, Log: "outer"}}},
		PluginSpec{Name: "inner", Pre: []PreSpec{{Behaviour: PreDenyAll, Reason: "inner says no", Log: "inner"}}},
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantLog(t, host, "outer", "called")
	wantLog(t, host, "inner", "called")
}

// 10. Ask("really?") with no approver → DENIED, reason contains "really?".
func case10(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h, PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}}, asker)
	r := host.Execute(ctx, "add", `{"a":2,"b":3}`)
	wantDenied(t, r, "", "really?")
	if r.DecidedBy == "" {
		t.Error("the denial names no decider")
	}
	wantLog(t, host, "body")
}

// 11. Ask with an approver that approves → ok; the approver saw the reason
// once.
func case11(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		approver("approver", ApproveYes, "approver"),
		asker,
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantLog(t, host, "approver", "asked really?")
}

// 12. Ask with an approver that errors, times out, or answers anything but
// approve → DENIED, reason says which.
func case12(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name    string
		b       Approve
		timeout time.Duration
		says    string
	}{
		{"approver_errors", ApproveError, 0, "failed"},
		// The approver never answers, so the short timeout cannot flake.
		{"approver_times_out", ApproveHang, 100 * time.Millisecond, "timed out"},
		{"approver_refuses", ApproveNo, 0, "refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := caseCtx(t)
			host := newHostWith(t, h, Config{ApprovalTimeout: tc.timeout},
				PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
				approver("approver", tc.b, "approver"),
				asker,
			)
			r := host.Execute(ctx, "add", `{"a":2,"b":3}`)
			wantDenied(t, r, "approver", tc.says, "really?")
			wantLog(t, host, "body")
			if tc.b == ApproveHang {
				// The approver's context is cancelled once it timed out.
				waitLog(t, host, "approver", "cancelled")
			}
		})
	}
}

// 13. Approver A then B registered; unload A → B decides. Fresh: unload B →
// A decides.
func case13(t *testing.T, h Harness) {
	plugins := []PluginSpec{
		{Name: "P", Tools: []ToolSpec{addTool("")}},
		approver("A", ApproveYes, "A"),
		approver("B", ApproveNo, "B"),
		asker,
	}
	t.Run("unload_older", func(t *testing.T) {
		ctx := caseCtx(t)
		host := newHost(t, h, plugins...)
		wantDenied(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "B", "refused")
		host.Unload(t, "A")
		wantDenied(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "B", "refused")
		wantLog(t, host, "A")
		wantLog(t, host, "B", "asked really?", "asked really?")
	})
	t.Run("unload_newer", func(t *testing.T) {
		ctx := caseCtx(t)
		host := newHost(t, h, plugins...)
		host.Unload(t, "B")
		wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
		wantLog(t, host, "A", "asked really?")
		wantLog(t, host, "B")
	})
}

// 14. A listener that panics or returns an unknown decision → DENIED; audit
// saw it. (remote: its process exits mid-call → DENIED promptly)
func case14(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		b    Pre
	}{
		{"panics", PrePanic},
		{"errors", PreError},
		{"unknown_decision", PreUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := caseCtx(t)
			host := newHost(t, h,
				PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
				PluginSpec{Name: "faulty", Pre: []PreSpec{{Behaviour: tc.b, Reason: "listener is broken", Log: "pre"}}},
			)
			wantDenied(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "faulty", "faulty")
			wantLog(t, host, "pre", "called")
			wantLog(t, host, "body")
			wantAudit(t, host, "add DENIED")
		})
	}
	t.Run("remote_process_exits_mid_call", func(t *testing.T) {
		ctx := caseCtx(t)
		host := newHost(t, h,
			PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
			PluginSpec{Name: "faulty", Pre: []PreSpec{{Behaviour: PreHang, Log: "pre"}}},
		)
		kill := killer(t, host)
		ch := callAsync(ctx, host, "add", `{"a":2,"b":3}`)
		waitLog(t, host, "pre", "called")
		kill.Kill(t, "faulty")
		wantDenied(t, await(t, ch, promptly), "faulty")
		wantLog(t, host, "body")
		wantAudit(t, host, "add DENIED")
	})
}

// 15. Ask approved, then a guard denies → DENIED with the guard's reason.
func case15(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
		approver("approver", ApproveYes, "approver"),
		asker,
		PluginSpec{Name: "wall", Guards: []GuardSpec{{Behaviour: GuardDenyAll, Reason: "the wall says no"}}},
	)
	r := host.Execute(ctx, "add", `{"a":2,"b":3}`)
	wantDenied(t, r, "wall")
	if r.Error.Message != "the wall says no" {
		t.Errorf("reason = %q, want the guard's", r.Error.Message)
	}
	wantLog(t, host, "approver", "asked really?")
	wantLog(t, host, "body")
}
