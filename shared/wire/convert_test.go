package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// roundTrip checks both directions: Go → proto → Go gives the Go value back,
// and proto → Go → proto gives an equal message back.
func roundTrip[G any, P proto.Message](t *testing.T, g G, to func(G) P, from func(P) G) {
	t.Helper()
	m := to(g)
	if back := from(m); !reflect.DeepEqual(back, g) {
		t.Errorf("Go → proto → Go\n got %#v\nwant %#v", back, g)
	}
	if again := to(from(m)); !proto.Equal(again, m) {
		t.Errorf("proto → Go → proto\n got %v\nwant %v", again, m)
	}
	// And across the wire for real: the bytes decode to the same message.
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	decoded := m.ProtoReflect().New().Interface()
	if err := proto.Unmarshal(b, decoded); err != nil {
		t.Fatal(err)
	}
	if back := from(decoded.(P)); !reflect.DeepEqual(back, g) {
		t.Errorf("Go → bytes → Go\n got %#v\nwant %#v", back, g)
	}
}

var fullDescriptor = ToolDescriptor{
	Name: "delete", Description: "deletes a path", Parameters: json.RawMessage(`{"type":"object"}`),
	Destructive: true, ReadOnly: false, Idempotent: true, Timeout: 1500 * time.Millisecond, Owner: "files",
}

func TestToolDescriptorRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		d    ToolDescriptor
	}{
		{name: "every field", d: fullDescriptor},
		{name: "read-only hint", d: ToolDescriptor{Name: "ls", Description: "lists", ReadOnly: true}},
		{name: "zero is absent", d: ToolDescriptor{}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.d, ToolDescriptorToProto, ToolDescriptorFromProto) })
	}
	t.Run("zero descriptor is sent as absent", func(t *testing.T) {
		if m := ToolDescriptorToProto(ToolDescriptor{}); m != nil {
			t.Errorf("got %v, want nil", m)
		}
	})
	t.Run("a sub-millisecond timeout stays a timeout", func(t *testing.T) {
		if ms := ToolDescriptorToProto(ToolDescriptor{Name: "x", Timeout: 500 * time.Microsecond}).GetTimeoutMs(); ms != 1 {
			t.Errorf("timeout_ms = %d, want 1", ms)
		}
	})
}

func TestExecutionRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		e    Execution
	}{
		{name: "every field", e: Execution{ID: "c1", Name: "delete", Arguments: json.RawMessage(`{"path":"/"}`), Caller: "cli", Tool: fullDescriptor}},
		{name: "unknown tool has no descriptor", e: Execution{ID: "c2", Name: "nope", Arguments: json.RawMessage(`{}`), Caller: "mcp"}},
		{name: "dry run", e: Execution{ID: "c3", Name: "delete", Arguments: json.RawMessage(`{}`), Caller: "cli", Tool: fullDescriptor, DryRun: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.e, ExecutionToProto, ExecutionFromProto) })
	}
}

func TestToolResultRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    ToolResult
	}{
		{name: "success", r: ToolResult{ID: "c1", OK: true, Value: json.RawMessage(`5`)}},
		{name: "denied", r: ToolResult{ID: "c2", Error: &ToolError{Code: CodeDenied, Message: "no"}, DecidedBy: "safety"}},
		{name: "shadow", r: ToolResult{ID: "c3", OK: true, Value: json.RawMessage(`1`), Shadow: []ShadowDecision{{Stage: 2, Plugin: "safety", Rule: "no_rm", Would: "DENIED", Reason: "rm"}, {Stage: 1, Plugin: "p", Would: "ASK"}}}},
		{name: "failed with a replaced value", r: ToolResult{ID: "c3", Value: json.RawMessage(`"[redacted]"`),
			Error: &ToolError{Code: CodeToolError, Message: "kaboom"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.r, ToolResultToProto, ToolResultFromProto) })
	}
}

func TestOutcomeRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		o    Outcome
	}{
		{name: "ok", o: Outcome{OK: true, Value: json.RawMessage(`[1,2]`)}},
		{name: "timeout", o: Outcome{Error: &ToolError{Code: CodeToolTimeout, Message: "slow exceeded 10ms"}}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.o, OutcomeToProto, OutcomeFromProto) })
	}
}

func TestDecisionRoundTrip(t *testing.T) {
	for _, d := range []Decision{
		{Verdict: VerdictPass}, {Verdict: VerdictAllow}, {Verdict: VerdictDeny, Reason: "a is negative"},
		{Verdict: VerdictAsk, Reason: "really?", Rule: "ask_destructive"}, {Verdict: VerdictUnspecified},
		{Verdict: Verdict(42), Reason: "from a newer plugin"}, // survives, so the reader can refuse it
	} {
		t.Run(d.Verdict.String(), func(t *testing.T) { roundTrip(t, d, DecisionToProto, DecisionFromProto) })
	}
}

func TestReviewRoundTrip(t *testing.T) {
	for _, r := range []Review{
		{Verdict: ReviewPass}, {Verdict: ReviewAccept}, {Verdict: ReviewReplace, Value: json.RawMessage(`"[redacted]"`)},
		{Verdict: ReviewBlock, Feedback: "not acceptable"}, {Verdict: ReviewUnspecified}, {Verdict: ReviewVerdict(9)},
	} {
		t.Run(r.Verdict.String(), func(t *testing.T) { roundTrip(t, r, ReviewToProto, ReviewFromProto) })
	}
}

func TestApprovalRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		a    Approval
	}{
		{name: "approved", a: Approval{Approved: true}},
		{name: "rejected", a: Approval{Reason: "not on the list"}},
	} {
		t.Run(tc.name, func(t *testing.T) { roundTrip(t, tc.a, ApprovalToProto, ApprovalFromProto) })
	}
}

func TestFromProtoNil(t *testing.T) {
	// A field missing on the wire reads as the zero value, never a panic.
	if got := ExecutionFromProto(nil); !reflect.DeepEqual(got, Execution{}) {
		t.Errorf("Execution = %#v", got)
	}
	if got := DecisionFromProto(nil); got.Verdict != VerdictUnspecified {
		t.Errorf("Decision = %#v", got)
	}
	if got := ReviewFromProto(nil); got.Verdict != ReviewUnspecified {
		t.Errorf("Review = %#v", got)
	}
	if got := ToolResultFromProto(nil); !reflect.DeepEqual(got, ToolResult{}) {
		t.Errorf("ToolResult = %#v", got)
	}
	if got := OutcomeFromProto(nil); !reflect.DeepEqual(got, Outcome{}) {
		t.Errorf("Outcome = %#v", got)
	}
	if got := ApprovalFromProto(nil); got != (Approval{}) {
		t.Errorf("Approval = %#v", got)
	}
}

func TestEnumsMirrorProto(t *testing.T) {
	// The Go verdicts are cast to and from pb's, so their numbers must agree.
	pairs := []struct {
		name     string
		got, pbv int32
	}{
		{"pass", int32(VerdictPass), int32(pb.Verdict_VERDICT_PASS)},
		{"allow", int32(VerdictAllow), int32(pb.Verdict_VERDICT_ALLOW)},
		{"deny", int32(VerdictDeny), int32(pb.Verdict_VERDICT_DENY)},
		{"ask", int32(VerdictAsk), int32(pb.Verdict_VERDICT_ASK)},
		{"review pass", int32(ReviewPass), int32(pb.ReviewVerdict_REVIEW_VERDICT_PASS)},
		{"accept", int32(ReviewAccept), int32(pb.ReviewVerdict_REVIEW_VERDICT_ACCEPT)},
		{"replace", int32(ReviewReplace), int32(pb.ReviewVerdict_REVIEW_VERDICT_REPLACE)},
		{"block", int32(ReviewBlock), int32(pb.ReviewVerdict_REVIEW_VERDICT_BLOCK)},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			if p.got != p.pbv {
				t.Errorf("Go %d != proto %d", p.got, p.pbv)
			}
		})
	}
	if n := len(pb.Verdict_name); n != len(verdictNames) {
		t.Errorf("proto has %d verdicts, Go names %d", n, len(verdictNames))
	}
	if n := len(pb.ReviewVerdict_name); n != len(reviewNames) {
		t.Errorf("proto has %d review verdicts, Go names %d", n, len(reviewNames))
	}
}
