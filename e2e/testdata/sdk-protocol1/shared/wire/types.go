package wire

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/plugkit-go/plugkit/shared/identity"
)

// Result codes, exactly as SPEC.md spells them. They travel in
// ToolError.Code.
const (
	CodeUnknownTool      = "UNKNOWN_TOOL"
	CodeInvalidArguments = "INVALID_ARGUMENTS"
	CodeDenied           = "DENIED"
	CodeBlocked          = "BLOCKED"
	CodeToolError        = "TOOL_ERROR"
	CodeToolTimeout      = "TOOL_TIMEOUT"
	CodeAborted          = "ABORTED"
)

// ToolDescriptor is what the host knows about a registered tool.
type ToolDescriptor struct {
	// Name is unique and non-empty.
	Name string
	// Description is required.
	Description string
	// Parameters is the JSON Schema of the arguments; nil means
	// {"type":"object"}.
	Parameters json.RawMessage
	// Destructive hints that the tool changes or deletes something.
	Destructive bool
	// ReadOnly hints that the tool only reads.
	ReadOnly bool
	// Idempotent hints that a repeated call has the effect of one.
	Idempotent bool
	// Timeout is the declared timeout; 0 means none. It travels in whole
	// milliseconds, rounded up so that a short timeout never becomes "none".
	Timeout time.Duration
	// Owner is the plugin that registered the tool; set by the host.
	Owner string
}

// Execution is the frozen call every stage sees.
type Execution struct {
	// ID is the call id; the final ToolResult carries it too.
	ID string
	// Name is the tool name as the caller asked for it.
	Name string
	// Arguments are canonical JSON bytes. Treat them as read-only.
	Arguments json.RawMessage
	// Caller is a client name or a plugin name.
	Caller string
	// Tool is the tool's descriptor; zero when the call never reached a tool
	// (UNKNOWN_TOOL).
	Tool ToolDescriptor
	// Principal is who the call is made for; zero when nobody said.
	Principal Principal
}

// Principal is who a call is made for (package identity).
type Principal = identity.Principal

// ToolError is the failure half of a result.
type ToolError struct {
	// Code is one of the Code* constants.
	Code string
	// Message says what went wrong.
	Message string
}

// ToolResult is what a call through the pipeline finally returns.
type ToolResult struct {
	// ID is the execution id.
	ID string
	// OK is true when the call succeeded.
	OK bool
	// Value is the result as JSON; a stage-4 listener may set it on a failed
	// call too.
	Value json.RawMessage
	// Error is set when OK is false.
	Error *ToolError
	// DecidedBy names the plugin or rule that denied or blocked the call.
	DecidedBy string
	// Duration is how long the call took in the host (lookup to the end of
	// stage 4); set on the results stage-5 observers receive.
	Duration time.Duration
}

// Outcome is the result of stage 3: the tool call and its wrappers.
type Outcome struct {
	// OK is true when the call succeeded.
	OK bool
	// Value is the result as JSON.
	Value json.RawMessage
	// Error is set when OK is false; its code is TOOL_ERROR, TOOL_TIMEOUT or
	// ABORTED.
	Error *ToolError
}

// Verdict is a stage-1 decision. Its values are those of pb.Verdict, so a
// value this version does not know survives conversion and is refused by
// whoever reads it.
type Verdict int32

// Stage-1 verdicts. VerdictUnspecified is never a valid answer: the host
// treats it as a failed listener and denies.
const (
	VerdictUnspecified Verdict = 0
	VerdictPass        Verdict = 1
	VerdictAllow       Verdict = 2
	VerdictDeny        Verdict = 3
	VerdictAsk         Verdict = 4
)

var verdictNames = map[Verdict]string{
	VerdictUnspecified: "unspecified", VerdictPass: "pass",
	VerdictAllow: "allow", VerdictDeny: "deny", VerdictAsk: "ask",
}

func (v Verdict) String() string { return enumName(verdictNames, v) }

// Decision is a stage-1 answer.
type Decision struct {
	Verdict Verdict
	// Reason is why, for deny; the question, for ask.
	Reason string
}

// ReviewVerdict is a stage-4 answer. Its values are those of
// pb.ReviewVerdict.
type ReviewVerdict int32

// Stage-4 verdicts. ReviewUnspecified is never a valid answer: the host
// treats it as a failed listener and blocks.
const (
	ReviewUnspecified ReviewVerdict = 0
	ReviewPass        ReviewVerdict = 1
	ReviewAccept      ReviewVerdict = 2
	ReviewReplace     ReviewVerdict = 3
	ReviewBlock       ReviewVerdict = 4
)

var reviewNames = map[ReviewVerdict]string{
	ReviewUnspecified: "unspecified", ReviewPass: "pass",
	ReviewAccept: "accept", ReviewReplace: "replace", ReviewBlock: "block",
}

func (v ReviewVerdict) String() string { return enumName(reviewNames, v) }

// Review is a stage-4 answer.
type Review struct {
	Verdict ReviewVerdict
	// Value is the replacement, for ReviewReplace.
	Value json.RawMessage
	// Feedback is why, for ReviewBlock.
	Feedback string
}

// Approval is an approver's answer to a stage-1 Ask.
type Approval struct {
	// Approved is the only answer that lets the call proceed.
	Approved bool
	// Reason is why not, when not approved.
	Reason string
}

func enumName[T ~int32](names map[T]string, v T) string {
	if n, ok := names[v]; ok {
		return n
	}
	return "unknown(" + strconv.FormatInt(int64(v), 10) + ")"
}
