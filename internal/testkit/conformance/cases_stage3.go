package conformance

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/pipeline/policy"
)

// loadPolicy loads a built-in policy into the host's kernel.
func loadPolicy(t *testing.T, host Host, p kernel.Plugin) {
	t.Helper()
	if _, err := host.Kernel().Load(p); err != nil {
		t.Fatalf("load policy %s: %v", p.Name, err)
	}
}

// count is how many times entry is in the named log.
func count(host Host, log, entry string) int {
	n := 0
	for _, e := range host.Log(log) {
		if e == entry {
			n++
		}
	}
	return n
}

// 23. A metrics wrapper sees start then end around the call.
func case23(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{
			addTool("body"),
			{Name: "fail", Description: "Fails.", Body: BodyError, Message: "kaboom"},
		}},
		PluginSpec{Name: "metrics", Exec: []ExecSpec{{Behaviour: ExecRecord, Log: "metrics"}}},
		limitGuard("limit", 100, "a is over 100"),
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantLog(t, host, "metrics", "start", "end ok")
	wantLog(t, host, "body", "run", "done")
	wantCode(t, host.Execute(ctx, "fail", `{}`), pipeline.CodeToolError, "kaboom")
	wantLog(t, host, "metrics", "start", "end ok", "start", "end TOOL_ERROR")
	// A denied call never reaches stage 3.
	wantDenied(t, host.Execute(ctx, "add", `{"a":999,"b":3}`), "limit")
	wantLog(t, host, "metrics", "start", "end ok", "start", "end TOOL_ERROR")
}

// 24. Tool timeout 10ms, body sleeps 1s → TOOL_TIMEOUT "slow exceeded 10ms"
// within ~10ms (not 1s); the body's context was cancelled. (remote too) A
// body that ignores its context is not waited for either, nor killed.
func case24(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name   string
		ignore bool
	}{
		{"body_honours_its_context", false},
		{"body_ignores_its_context", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := caseCtx(t)
			host := newHost(t, h)
			loadPolicy(t, host, policy.Timeout())
			slow := slowTool("slow", 10*time.Millisecond, time.Second, "slow")
			slow.IgnoreCancel = tc.ignore
			mustLoad(t, host, PluginSpec{Name: "P", Tools: []ToolSpec{slow}})
			start := time.Now()
			r := host.Execute(ctx, "slow", `{}`)
			took := time.Since(start)
			wantCode(t, r, pipeline.CodeToolTimeout)
			if r.Error.Message != "slow exceeded 10ms" {
				t.Errorf("message = %q, want %q", r.Error.Message, "slow exceeded 10ms")
			}
			if took >= fastEnough {
				t.Errorf("the call took %v: the timeout did not stop the wait (the body sleeps 1s)", took)
			}
			wantAudit(t, host, "slow TOOL_TIMEOUT")
			if !eventually(func() bool { return slices.Contains(host.Log("slow"), "run") }) {
				// A remote call can be cancelled on its way, before the
				// plugin starts the body (10 ms is short on a loaded
				// machine): then there is no body to have finished or been
				// cancelled.
				t.Logf("the call was cancelled before its body started")
				return
			}
			if tc.ignore {
				// The body was left to finish: a timeout notifies, it does
				// not kill.
				waitLog(t, host, "slow", "done")
			} else {
				waitLog(t, host, "slow", "cancelled")
			}
		})
	}
}

// 25. No declared timeout → the timeout policy passes through.
func case25(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h)
	loadPolicy(t, host, policy.Timeout())
	mustLoad(t, host, PluginSpec{Name: "P", Tools: []ToolSpec{addTool(""), slowTool("nap", 0, 20*time.Millisecond, "nap")}})
	wantOK(t, host.Execute(ctx, "nap", `{}`), `"slept"`)
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantLog(t, host, "nap", "run", "done")
}

// 26. A wrapper returns a result without calling next → the body did not
// run; that result is returned.
func case26(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
		PluginSpec{Name: "cache", Exec: []ExecSpec{{Behaviour: ExecShortCircuit, Value: `"from the cache"`, Log: "cache"}}},
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), `"from the cache"`)
	wantLog(t, host, "cache", "called")
	wantLog(t, host, "body")
}

// 27. Retry outer, timeout inner, first attempt slow, second fast → ok; each
// attempt had its own clock. Timeout outer, retry inner → one clock for
// both attempts.
func case27(t *testing.T, h Harness) {
	retry := policy.Retry(policy.RetryConfig{Attempts: 3, Backoff: time.Millisecond})
	// Each attempt of paced fits in its 1s clock; both together do not.
	paced := ToolSpec{
		Name: "paced", Description: "Fails once, slowly.", Idempotent: true, Timeout: time.Second,
		Body: BodyScript, Script: []Step{{Sleep: 600 * time.Millisecond, Error: "flaky"}, {Sleep: 600 * time.Millisecond}}, Log: "paced",
	}

	t.Run("retry_outer_first_slow_second_fast", func(t *testing.T) {
		ctx := caseCtx(t)
		host := newHost(t, h)
		loadPolicy(t, host, retry)
		loadPolicy(t, host, policy.Timeout())
		mustLoad(t, host, PluginSpec{Name: "P", Tools: []ToolSpec{{
			Name: "flaky", Description: "Slow once.", Idempotent: true, Timeout: 100 * time.Millisecond,
			Body: BodyScript, Script: []Step{{Sleep: time.Minute}, {}}, Log: "flaky",
		}}})
		wantOK(t, host.Execute(ctx, "flaky", `{}`), `"attempt 2"`)
		waitLog(t, host, "flaky", "cancelled")
		if n := count(host, "flaky", "run"); n != 2 {
			t.Errorf("the body ran %d times, want 2", n)
		}
	})
	t.Run("retry_outer_each_attempt_own_clock", func(t *testing.T) {
		ctx := caseCtx(t)
		host := newHost(t, h)
		loadPolicy(t, host, retry)
		loadPolicy(t, host, policy.Timeout())
		mustLoad(t, host, PluginSpec{Name: "P", Tools: []ToolSpec{paced}})
		wantOK(t, host.Execute(ctx, "paced", `{}`), `"attempt 2"`)
		wantLog(t, host, "paced", "run", "done", "run", "done")
	})
	t.Run("timeout_outer_one_clock", func(t *testing.T) {
		ctx := caseCtx(t)
		host := newHost(t, h)
		loadPolicy(t, host, policy.Timeout())
		loadPolicy(t, host, retry)
		mustLoad(t, host, PluginSpec{Name: "P", Tools: []ToolSpec{paced}})
		wantCode(t, host.Execute(ctx, "paced", `{}`), pipeline.CodeToolTimeout, "paced exceeded 1s")
		// The second attempt started under the same clock and was cut short.
		waitLog(t, host, "paced", "cancelled")
		wantLog(t, host, "paced", "run", "done", "run", "cancelled")
	})
}

// 28. The caller cancels while the body runs → ABORTED; the body's context
// was cancelled. (remote: cancellation reaches the plugin process)
func case28(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h, PluginSpec{Name: "P", Tools: []ToolSpec{slowTool("hang", 0, time.Minute, "hang")}})
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ch := callAsync(cctx, host, "hang", `{}`)
	waitLog(t, host, "hang", "run")
	cancel()
	wantCode(t, await(t, ch, promptly), pipeline.CodeAborted)
	waitLog(t, host, "hang", "cancelled")
	wantAudit(t, host, "hang ABORTED")
}

// 29. The body returns an error "kaboom" → TOOL_ERROR "kaboom". The body
// panics → TOOL_ERROR, and the host keeps serving.
func case29(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h, PluginSpec{Name: "P", Tools: []ToolSpec{
		addTool(""),
		{Name: "fail", Description: "Fails.", Body: BodyError, Message: "kaboom"},
		{Name: "boom", Description: "Panics.", Body: BodyPanic, Message: "boom"},
	}})
	r := host.Execute(ctx, "fail", `{}`)
	wantCode(t, r, pipeline.CodeToolError)
	if r.Error.Message != "kaboom" {
		t.Errorf("message = %q, want %q", r.Error.Message, "kaboom")
	}
	wantCode(t, host.Execute(ctx, "boom", `{}`), pipeline.CodeToolError, "boom")
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantCode(t, host.Execute(ctx, "boom", `{}`), pipeline.CodeToolError, "boom")
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantAudit(t, host, "fail TOOL_ERROR", "boom TOOL_ERROR", "add ok", "boom TOOL_ERROR", "add ok")
}

// 30. (remote) The tool's process is killed mid-call → TOOL_ERROR promptly;
// the tool is gone from the registry afterwards.
func case30(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "victim", Tools: []ToolSpec{slowTool("hang", 0, time.Minute, "hang")}},
		PluginSpec{Name: "other", Tools: []ToolSpec{addTool("")}},
	)
	kill := killer(t, host)
	ch := callAsync(ctx, host, "hang", `{}`)
	waitLog(t, host, "hang", "run")
	start := time.Now()
	kill.Kill(t, "victim")
	wantCode(t, await(t, ch, promptly), pipeline.CodeToolError)
	t.Logf("the call returned %v after the kill", time.Since(start))
	waitFor(t, "hang to leave the registry", func() bool {
		_, ok := host.Tools().Lookup("hang")
		return !ok
	})
	code := wantGone(t, host.Execute(ctx, "hang", `{}`))
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantAudit(t, host, "hang TOOL_ERROR", "hang "+string(code), "add ok")
}
