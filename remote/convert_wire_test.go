package remote

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// The host's conversions go through package wire alone, so what a plugin
// reads (the SDK reads with wire's FromProto converters) is what the host
// meant. A 500µs timeout survives the call a plugin is sent: the wire
// rounds up to 1ms, where truncating made it 0, "no timeout".
func TestExecutionCarriesShortTimeout(t *testing.T) {
	t.Parallel()
	info := &pipeline.ToolInfo{ToolDescriptor: wire.ToolDescriptor{Name: "t", Description: "d", Timeout: 500 * time.Microsecond, Owner: "p"}}
	e := pipeline.NewExecution("1", "t", "cli", info, `{"a":1}`)
	e.SetApproval(`{"route":"oncall"}`)
	got := wire.ExecutionFromProto(toExecution(e))
	if got.Tool.Timeout != time.Millisecond {
		t.Errorf("a 500µs timeout reached the plugin as %v, want 1ms", got.Tool.Timeout)
	}
	if got.ID != "1" || got.Name != "t" || got.Caller != "cli" || string(got.Arguments) != `{"a":1}` ||
		got.Tool.Name != "t" || got.Tool.Description != "d" || got.Tool.Owner != "p" ||
		string(got.Approval) != `{"route":"oncall"}` || got.Principal.ID != e.Principal().ID || got.DryRun || got.Visibility {
		t.Errorf("plugin reads %+v", got)
	}
	if by := wire.ExecutionFromProto(toExecutionByRef(e)); by.Tool.Name != "" || by.ID != "1" {
		t.Errorf("by ref: %+v, want the call without its descriptor", by)
	}
}

// A result, an outcome, a decision and a review read back by the wire's
// converters (the plugin's side) as the pipeline had them.
func TestResultsReadByPlugins(t *testing.T) {
	t.Parallel()
	shadow := []pipeline.ShadowDecision{{Stage: 2, Plugin: "safety", Rule: "no-rm", Would: "DENIED", Reason: "rm"}}
	r := pipeline.Result{ID: "9", Error: &pipeline.Error{Code: pipeline.CodeDenied, Message: "no"}, DecidedBy: "safety", Duration: 3 * time.Millisecond, Shadow: shadow}
	got := wire.ToolResultFromProto(ToResult(r))
	want := wire.ToolResult{ID: "9", Error: &wire.ToolError{Code: wire.CodeDenied, Message: "no"}, DecidedBy: "safety", Duration: 3 * time.Millisecond, Shadow: shadow}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("result read as %+v, want %+v", got, want)
	}
	// A value that is not JSON is a TOOL_ERROR, never a lost result.
	bad := wire.ToolResultFromProto(ToResult(pipeline.Result{ID: "8", OK: true, Value: func() {}, DecidedBy: "x"}))
	if bad.OK || bad.Error == nil || bad.Error.Code != wire.CodeToolError || bad.DecidedBy != "" {
		t.Errorf("unencodable value read as %+v", bad)
	}

	out := fromOutcome(toOutcome(pipeline.Result{OK: true, Value: map[string]int{"n": 1}}))
	if !out.OK || string(out.JSONValue()) != `{"n":1}` || out.Error != nil {
		t.Errorf("outcome round trip = %+v", out)
	}
	failed := fromOutcome(toOutcome(pipeline.Fail(pipeline.CodeToolTimeout, "slow")))
	if failed.OK || failed.Code() != pipeline.CodeToolTimeout || failed.Error.Message != "slow" {
		t.Errorf("failed outcome round trip = %+v", failed)
	}
	if o := wire.OutcomeFromProto(toOutcome(pipeline.Result{OK: true, Value: make(chan int)})); o.OK || o.Error.Code != wire.CodeToolError {
		t.Errorf("unencodable outcome = %+v", o)
	}

	for _, d := range []pipeline.Decision{pipeline.Allow(), pipeline.Deny("no"), {Verdict: pipeline.VerdictAsk, Reason: "sure?", Rule: "r", Route: "oncall"}} {
		w := wire.DecisionFromProto(toDecision(d))
		if w.Verdict != d.Verdict || w.Reason != d.Reason || w.Rule != d.Rule || w.Route != d.Route {
			t.Errorf("decision %+v read as %+v", d, w)
		}
	}
	for _, c := range []struct {
		rv   pipeline.Review
		want wire.Review
	}{
		{pipeline.Accept(), wire.Review{Verdict: wire.ReviewAccept}},
		{pipeline.Block("leaks"), wire.Review{Verdict: wire.ReviewBlock, Feedback: "leaks"}},
		{pipeline.AcceptReplacing("redacted"), wire.Review{Verdict: wire.ReviewReplace, Value: json.RawMessage(`"redacted"`)}},
		{pipeline.AcceptReplacing(errors.New), wire.Review{Verdict: wire.ReviewBlock}},
	} {
		got := wire.ReviewFromProto(toReview(c.rv))
		if c.want.Verdict == wire.ReviewBlock && c.rv.Action == pipeline.ReviewReplace {
			got.Feedback = "" // the encoder's error, whatever its words
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("review %+v read as %+v, want %+v", c.rv, got, c.want)
		}
	}
	if fromError(nil) != nil || toError(nil) != (*pb.ToolError)(nil) {
		t.Error("no error became one")
	}
}
