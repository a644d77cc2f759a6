package conformance

import (
	"testing"
	"time"
)

// limitGuard is a plugin named name whose guard denies a > limit.
func limitGuard(name string, limit float64, reason string) PluginSpec {
	return PluginSpec{Name: name, Guards: []GuardSpec{{Behaviour: GuardDenyWhenGreater, Field: "a", Limit: limit, Reason: reason, Log: name}}}
}

// 16. A guard denies a>100: a=1 → ok; a=999 → DENIED with exactly the
// guard's reason.
func case16(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
		limitGuard("limit", 100, "a is over 100"),
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":1,"b":2}`), "3")
	r := host.Execute(ctx, "add", `{"a":999,"b":2}`)
	wantDenied(t, r, "limit")
	if r.Error.Message != "a is over 100" {
		t.Errorf("reason = %q, want exactly the guard's %q", r.Error.Message, "a is over 100")
	}
	wantLog(t, host, "body", "run", "done")
}

// 17. A stage-1 listener returns Allow; a guard denies everything → DENIED.
func case17(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
		PluginSpec{Name: "allower", Pre: []PreSpec{{Behaviour: PreAllow}}},
		PluginSpec{Name: "wall", Guards: []GuardSpec{{Behaviour: GuardDenyAll, Reason: "no entry"}}},
	)
	wantDenied(t, host.Execute(ctx, "add", `{"a":1,"b":2}`), "wall", "no entry")
	wantLog(t, host, "body")
}

// 18. Two guards, one denying, one silent, registered in either order →
// DENIED both ways.
func case18(t *testing.T, h Harness) {
	deny := PluginSpec{Name: "denier", Guards: []GuardSpec{{Behaviour: GuardDenyAll, Reason: "denied"}}}
	silent := PluginSpec{Name: "silent", Guards: []GuardSpec{{Behaviour: GuardSilent}}}
	for _, tc := range []struct {
		name  string
		order []PluginSpec
	}{
		{"denying_first", []PluginSpec{deny, silent}},
		{"silent_first", []PluginSpec{silent, deny}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := caseCtx(t)
			host := newHost(t, h, append([]PluginSpec{{Name: "P", Tools: []ToolSpec{addTool("body")}}}, tc.order...)...)
			wantDenied(t, host.Execute(ctx, "add", `{"a":1,"b":2}`), "denier", "denied")
			wantLog(t, host, "body")
		})
	}
}

// 19. G1 and G2 both deny → the reported reason is G1's (registration
// order), even when evaluated concurrently. G1 answers late, so a
// concurrent evaluation would hear G2 first.
func case19(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		PluginSpec{Name: "g1", Guards: []GuardSpec{{Behaviour: GuardDenyAll, Reason: "g1 says no", Sleep: 50 * time.Millisecond}}},
		PluginSpec{Name: "g2", Guards: []GuardSpec{{Behaviour: GuardDenyAll, Reason: "g2 says no"}}},
	)
	for range 3 {
		r := host.Execute(ctx, "add", `{"a":1,"b":2}`)
		wantDenied(t, r, "g1")
		if r.Error.Message != "g1 says no" {
			t.Errorf("reason = %q, want G1's", r.Error.Message)
		}
	}
}

// 20. A guard that panics or errors → DENIED "guard … failed: …". (remote:
// guard process killed → DENIED promptly, never allowed)
func case20(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		b    Guard
	}{
		{"panics", GuardPanic},
		{"errors", GuardError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := caseCtx(t)
			host := newHost(t, h,
				PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
				PluginSpec{Name: "faulty", Guards: []GuardSpec{{Behaviour: tc.b, Reason: "guard is broken"}}},
			)
			wantDenied(t, host.Execute(ctx, "add", `{"a":1,"b":2}`), "faulty", "guard", "faulty", "failed")
			wantLog(t, host, "body")
		})
	}
	t.Run("remote_guard_killed_mid_call", func(t *testing.T) {
		ctx := caseCtx(t)
		host := newHost(t, h,
			PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
			PluginSpec{Name: "faulty", Guards: []GuardSpec{{Behaviour: GuardHang, Log: "guard"}}},
		)
		kill := killer(t, host)
		ch := callAsync(ctx, host, "add", `{"a":1,"b":2}`)
		waitLog(t, host, "guard", "called")
		kill.Kill(t, "faulty")
		wantDenied(t, await(t, ch, promptly), "faulty")
		wantLog(t, host, "body")
	})
}

// 21. Stage 1 denied → no guard ran.
func case21(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		PluginSpec{Name: "veto", Pre: []PreSpec{{Behaviour: PreDenyAll, Reason: "vetoed"}}},
		PluginSpec{Name: "guard", Guards: []GuardSpec{{Behaviour: GuardSilent, Log: "guard"}}},
	)
	wantDenied(t, host.Execute(ctx, "add", `{"a":1,"b":2}`), "veto", "vetoed")
	wantLog(t, host, "guard")
}

// 22. Unload the plugin that owns a guard → the call it denied now
// succeeds; nothing else changed.
func case22(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		limitGuard("limit100", 100, "a is over 100"),
		limitGuard("limit1000", 1000, "a is over 1000"),
		PluginSpec{Name: "watcher", Pre: []PreSpec{{Behaviour: PrePass, Log: "pre"}}},
	)
	wantDenied(t, host.Execute(ctx, "add", `{"a":999,"b":1}`), "limit100", "a is over 100")
	host.Unload(t, "limit100")
	wantOK(t, host.Execute(ctx, "add", `{"a":999,"b":1}`), "1000")
	wantDenied(t, host.Execute(ctx, "add", `{"a":5000,"b":1}`), "limit1000", "a is over 1000")
	wantLog(t, host, "pre", "called", "called", "called")
	wantAudit(t, host, "add DENIED", "add ok", "add DENIED")
	if _, ok := host.Tools().Lookup("add"); !ok {
		t.Error("add is gone")
	}
}
