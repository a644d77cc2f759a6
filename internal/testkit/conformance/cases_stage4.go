package conformance

import (
	"testing"

	"github.com/plugkit-go/plugkit/pipeline"
)

// 31. Accept.replacing("[redacted]") → ok, value "[redacted]".
func case31(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		PluginSpec{Name: "redactor", Post: []PostSpec{{Behaviour: PostReplace, Value: `"[redacted]"`}}},
	)
	r := host.Execute(ctx, "add", `{"a":2,"b":3}`)
	wantOK(t, r, `"[redacted]"`)
	if r.DecidedBy != "" {
		t.Errorf("an accepted call names a decider: %q", r.DecidedBy)
	}
}

// 32. Block("not acceptable") → BLOCKED "not acceptable", even on a
// successful call.
func case32(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
		PluginSpec{Name: "reviewer", Post: []PostSpec{{Behaviour: PostBlock, Reason: "not acceptable"}}},
	)
	r := host.Execute(ctx, "add", `{"a":2,"b":3}`)
	wantCode(t, r, pipeline.CodeBlocked)
	if r.Error.Message != "not acceptable" {
		t.Errorf("message = %q, want %q", r.Error.Message, "not acceptable")
	}
	if r.DecidedBy != "reviewer" {
		t.Errorf("decided by %q, want reviewer", r.DecidedBy)
	}
	if r.Value != nil {
		t.Errorf("a blocked result carries the value %v", r.Value)
	}
	wantLog(t, host, "body", "run", "done")
}

// 33. A listener that only calls next → result unchanged.
func case33(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool(""), {Name: "fail", Description: "Fails.", Body: BodyError, Message: "kaboom"}}},
		PluginSpec{Name: "passer", Post: []PostSpec{{Behaviour: PostPass, Log: "post"}}},
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantCode(t, host.Execute(ctx, "fail", `{}`), pipeline.CodeToolError, "kaboom")
	wantLog(t, host, "post", "called", "called")
}

// 34. The body failed and a listener replaces the value → still not ok,
// same error code, new value.
func case34(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{{Name: "fail", Description: "Fails.", Body: BodyError, Message: "kaboom"}}},
		PluginSpec{Name: "redactor", Post: []PostSpec{{Behaviour: PostReplace, Value: `"[redacted]"`}}},
	)
	r := host.Execute(ctx, "fail", `{}`)
	wantCode(t, r, pipeline.CodeToolError, "kaboom")
	if got := valueJSON(t, r.Value); got != `"[redacted]"` {
		t.Errorf("value = %s, want the replacement", got)
	}
}

// 35. A listener that fails → BLOCKED (fail closed), audit saw it.
func case35(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name string
		b    Post
	}{
		{"errors", PostError},
		{"panics", PostPanic},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := caseCtx(t)
			host := newHost(t, h,
				PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
				PluginSpec{Name: "faulty", Post: []PostSpec{{Behaviour: tc.b, Reason: "reviewer is broken"}}},
			)
			r := host.Execute(ctx, "add", `{"a":2,"b":3}`)
			wantCode(t, r, pipeline.CodeBlocked, "faulty")
			if r.DecidedBy != "faulty" {
				t.Errorf("decided by %q, want faulty", r.DecidedBy)
			}
			if r.Value != nil {
				t.Errorf("a blocked result leaks the value %v", r.Value)
			}
			wantAudit(t, host, "add BLOCKED")
		})
	}
}

// 36. A denied call → no post-execute listener ran.
func case36(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name   string
		denier PluginSpec
	}{
		{"stage1_denial", PluginSpec{Name: "denier", Pre: []PreSpec{{Behaviour: PreDenyAll, Reason: "no"}}}},
		{"guard_denial", PluginSpec{Name: "denier", Guards: []GuardSpec{{Behaviour: GuardDenyAll, Reason: "no"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := caseCtx(t)
			host := newHost(t, h,
				PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
				PluginSpec{Name: "reviewer", Post: []PostSpec{{Behaviour: PostPass, Log: "post"}}},
				tc.denier,
			)
			wantDenied(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "denier", "no")
			wantLog(t, host, "post")
		})
	}
}
