package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/pipeline/policy"
)

// 37. Calls a=1 then a denied call → audit saw [(add, ok), (add, DENIED)].
func case37(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		limitGuard("limit", 100, "a is over 100"),
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":1,"b":2}`), "3")
	wantDenied(t, host.Execute(ctx, "add", `{"a":999,"b":2}`), "limit")
	wantAudit(t, host, "add ok", "add DENIED")
	if recs := host.Audit(); len(recs) == 2 && recs[1].DecidedBy != "limit" {
		t.Errorf("audit says %q decided the denial, want limit", recs[1].DecidedBy)
	}
}

// 38. Audit listener A panics → B still sees every call; the caller's
// result is unchanged.
func case38(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		PluginSpec{Name: "A", Observers: []ObserverSpec{{Behaviour: ObservePanic, Log: "A"}}},
		PluginSpec{Name: "B", Observers: []ObserverSpec{{Behaviour: ObserveRecord, Log: "B"}}},
	)
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantCode(t, host.Execute(ctx, "nope", `{}`), pipeline.CodeUnknownTool)
	wantCode(t, host.Execute(ctx, "add", `{"a":"x","b":3}`), pipeline.CodeInvalidArguments)
	want := []string{"add ok", "nope UNKNOWN_TOOL", "add INVALID_ARGUMENTS"}
	wantLog(t, host, "A", want...)
	wantLog(t, host, "B", want...)
	wantAudit(t, host, want...)
}

// 39. Every outcome code appears in audit exactly once per call, in a test
// that produces each code.
func case39(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h)
	loadPolicy(t, host, policy.Timeout())
	mustLoad(t, host, PluginSpec{Name: "P", Tools: []ToolSpec{
		addTool(""),
		{Name: "fail", Description: "Fails.", Body: BodyError, Message: "kaboom"},
		slowTool("slow", 10*time.Millisecond, time.Second, ""),
		slowTool("hang", 0, time.Minute, "hang"),
		{Name: "secret", Description: "Echoes.", Body: BodyEcho},
	}})
	mustLoad(t, host, limitGuard("limit", 100, "a is over 100"))
	mustLoad(t, host, PluginSpec{Name: "censor", Post: []PostSpec{{Behaviour: PostBlock, Reason: "censored", Tools: []string{"secret"}}}})

	abort := func() pipeline.Result {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		ch := callAsync(cctx, host, "hang", `{}`)
		waitLog(t, host, "hang", "run")
		cancel()
		return await(t, ch, promptly)
	}
	calls := []struct {
		code pipeline.Code // "" is success
		call func() pipeline.Result
	}{
		{"", func() pipeline.Result { return host.Execute(ctx, "add", `{"a":2,"b":3}`) }},
		{pipeline.CodeUnknownTool, func() pipeline.Result { return host.Execute(ctx, "nope", `{}`) }},
		{pipeline.CodeInvalidArguments, func() pipeline.Result { return host.Execute(ctx, "add", `{"a":"x","b":3}`) }},
		{pipeline.CodeDenied, func() pipeline.Result { return host.Execute(ctx, "add", `{"a":999,"b":3}`) }},
		{pipeline.CodeBlocked, func() pipeline.Result { return host.Execute(ctx, "secret", `{}`) }},
		{pipeline.CodeToolError, func() pipeline.Result { return host.Execute(ctx, "fail", `{}`) }},
		{pipeline.CodeToolTimeout, func() pipeline.Result { return host.Execute(ctx, "slow", `{}`) }},
		{pipeline.CodeAborted, abort},
	}
	var results []pipeline.Result
	for _, c := range calls {
		r := c.call()
		if r.Code() != c.code {
			t.Errorf("call meant to give %q gave %s", c.code, describe(r))
		}
		results = append(results, r)
	}
	recs := host.Audit()
	if len(recs) != len(calls) {
		t.Fatalf("audit has %d records for %d calls: %q", len(recs), len(calls), audited(recs))
	}
	for i, r := range results {
		n := 0
		for _, rec := range recs {
			if rec.ID == r.ID {
				n++
				if rec.Code != r.Code() || rec.OK != r.OK {
					t.Errorf("call %d: audit saw %s, the caller got %s", i, auditOutcome(rec), describe(r))
				}
			}
		}
		if n != 1 {
			t.Errorf("call %d (%s, id %q) is in the audit %d times, want once", i, describe(r), r.ID, n)
		}
	}
}
