package conformance

import (
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
)

// Cases 46–49 are SPEC §5's bounded listeners: a remote listener that
// neither answers nor continues the chain is bounded by its own time
// (Config.ListenerTimeout), filter and wrapper alike, and a wrapper's time
// does not count the time spent inside next.

// hangBound is the listener timeout of the hanging cases: the call must
// end soon after it, long before the case gives up.
const hangBound = 300 * time.Millisecond

// bounded returns a fresh host whose remote listeners are bounded by
// timeout, skipping t on a harness whose listeners are not remote.
func bounded(t *testing.T, h Harness, timeout time.Duration, plugins ...PluginSpec) Host {
	t.Helper()
	host := newHostWith(t, h, Config{ListenerTimeout: timeout}, plugins...)
	if _, ok := host.(Bounded); !ok {
		t.Skipf("remote-only case: this harness's Host does not implement conformance.Bounded (its listeners are in-host code, which the host trusts)")
	}
	return host
}

// forms runs a case once with each of a listener's two forms over the
// wire.
func forms[B any](t *testing.T, wrapper, filter B, run func(t *testing.T, b B)) {
	t.Run("wrapper", func(t *testing.T) { run(t, wrapper) })
	t.Run("filter", func(t *testing.T) { run(t, filter) })
}

// 46. (remote) A stage-1 listener that never answers (nor calls next) →
// DENIED naming it, soon after the listener timeout; the body did not run.
func case46(t *testing.T, h Harness) {
	forms(t, PreHang, PreHangFilter, func(t *testing.T, b Pre) {
		ctx := caseCtx(t)
		host := bounded(t, h, hangBound,
			PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
			PluginSpec{Name: "stuck", Pre: []PreSpec{{Behaviour: b, Log: "pre"}}},
		)
		r := await(t, callAsync(ctx, host, "add", `{"a":1,"b":2}`), hangBound+promptly)
		wantDenied(t, r, "stuck", "stuck", "no answer")
		wantLog(t, host, "pre", "called")
		wantLog(t, host, "body")
		wantAudit(t, host, "add DENIED")
	})
}

// 47. (remote) A stage-3 listener that never answers (nor calls next) →
// TOOL_TIMEOUT naming it, as the tool's own timeout would; the body did
// not run.
func case47(t *testing.T, h Harness) {
	forms(t, ExecHang, ExecHangFilter, func(t *testing.T, b Exec) {
		ctx := caseCtx(t)
		host := bounded(t, h, hangBound,
			PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
			PluginSpec{Name: "stuck", Exec: []ExecSpec{{Behaviour: b, Log: "exec"}}},
		)
		r := await(t, callAsync(ctx, host, "add", `{"a":1,"b":2}`), hangBound+promptly)
		wantCode(t, r, pipeline.CodeToolTimeout, "stuck", "no answer")
		wantLog(t, host, "exec", "called")
		wantLog(t, host, "body")
		wantAudit(t, host, "add TOOL_TIMEOUT")
	})
}

// 48. (remote) A stage-4 listener that never answers (nor calls next) →
// BLOCKED naming it, even on a successful call.
func case48(t *testing.T, h Harness) {
	forms(t, PostHang, PostHangFilter, func(t *testing.T, b Post) {
		ctx := caseCtx(t)
		host := bounded(t, h, hangBound,
			PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
			PluginSpec{Name: "stuck", Post: []PostSpec{{Behaviour: b, Log: "post"}}},
		)
		r := await(t, callAsync(ctx, host, "add", `{"a":1,"b":2}`), hangBound+promptly)
		wantCode(t, r, pipeline.CodeBlocked, "stuck", "no answer")
		if r.DecidedBy != "stuck" {
			t.Errorf("decided by %q, want stuck", r.DecidedBy)
		}
		wantLog(t, host, "body", "run", "done")
		wantLog(t, host, "post", "called")
		wantAudit(t, host, "add BLOCKED")
	})
}

// 49. (remote) A wrapper's bound does not count the time inside next: with
// a 1s listener timeout, a stage-1 and a stage-4 wrapper each take 0.4s of
// their own around an inner listener taking 0.7s, and a stage-3 wrapper
// holds a tool that runs 1.5s → ok.
func case49(t *testing.T, h Harness) {
	const bound = time.Second
	ctx := caseCtx(t)
	host := bounded(t, h, bound,
		PluginSpec{Name: "P", Tools: []ToolSpec{slowTool("slow", 0, 3*bound/2, "body")}},
		PluginSpec{Name: "outer",
			Pre:  []PreSpec{{Behaviour: PreDenyWhenNegative, Field: "a", Reason: "negative", Sleep: 2 * bound / 5, Log: "outer_pre"}},
			Exec: []ExecSpec{{Behaviour: ExecRecord, Log: "exec"}},
			Post: []PostSpec{{Behaviour: PostWrapPass, Sleep: 2 * bound / 5, Log: "outer_post"}},
		},
		PluginSpec{Name: "inner",
			Pre:  []PreSpec{{Behaviour: PrePass, Sleep: 7 * bound / 10, Log: "inner_pre"}},
			Post: []PostSpec{{Behaviour: PostPass, Sleep: 7 * bound / 10, Log: "inner_post"}},
		},
	)
	wantOK(t, host.Execute(ctx, "slow", `{"a":1}`), `"slept"`)
	wantLog(t, host, "outer_pre", "called")
	wantLog(t, host, "inner_pre", "called")
	wantLog(t, host, "exec", "start", "end ok")
	wantLog(t, host, "body", "run", "done")
	wantLog(t, host, "outer_post", "called")
	wantLog(t, host, "inner_post", "called")
}
