package wire

import (
	"encoding/json"
	"strconv"
	"time"

	"github.com/plugkit-go/plugkit/shared/identity"
)

// Code is the outcome of a call that did not succeed; it travels in
// ToolError.Code. The host's pipeline uses these very values (its Code is
// this type), so the seven codes are defined here and nowhere else.
type Code string

// Result codes, exactly as SPEC.md spells them.
const (
	CodeUnknownTool      Code = "UNKNOWN_TOOL"
	CodeInvalidArguments Code = "INVALID_ARGUMENTS"
	CodeDenied           Code = "DENIED"
	CodeBlocked          Code = "BLOCKED"
	CodeToolError        Code = "TOOL_ERROR"
	CodeToolTimeout      Code = "TOOL_TIMEOUT"
	CodeAborted          Code = "ABORTED"
)

// Known says whether c is one of the seven codes: a reader treats any
// other code as the sender's own failure (TOOL_ERROR).
func (c Code) Known() bool {
	switch c {
	case CodeUnknownTool, CodeInvalidArguments, CodeDenied, CodeBlocked, CodeToolError, CodeToolTimeout, CodeAborted:
		return true
	}
	return false
}

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
	// Notes, Held and Definition are for tools a plugin bridges from a
	// source it does not vouch for: what the host shows beside the tool,
	// why it is held absent ("" when it is served), and the pin of its
	// definition.
	Notes      []string
	Held       string
	Definition string
	// OwnerPrefix asks the host to register the tool as OWNER_Name.
	OwnerPrefix bool
	// Kind is "" for a tool, else what else the entry is (KindResource
	// and the others): an entry of a kind is never served as a tool.
	Kind string
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
	// DryRun marks a call that is explained, not made (`host explain`,
	// `host test`): answer what you would decide and act on nothing. Only
	// a plugin that declares dry-run support is sent one.
	DryRun bool
	// Approval is how an approval route's approvers decided the call's
	// Ask, as JSON; nil when none did. Stage-5 observers see it.
	Approval json.RawMessage
	// Elicitations are the questions a plugin put to the caller during
	// the call, as a JSON array of {"mode", "action"}: that each was asked
	// and how it was answered, never what. nil when none was. Stage-5
	// observers see it.
	Elicitations json.RawMessage
	// Visibility marks the visibility question, a dry run without
	// arguments: could any call of the tool by the principal be allowed or
	// asked? Deny only when every call would be denied, whatever the
	// arguments. Only a plugin that declares visibility support is sent one.
	Visibility bool
}

// Principal is who a call is made for (package identity).
type Principal = identity.Principal

// ToolError is the failure half of a result.
type ToolError struct {
	// Code is one of the Code* constants.
	Code Code
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
	// Omitted, on a result a stage-5 observer receives, describes a value
	// larger than the observing plugin's max_result_bytes; Value is then
	// nil.
	Omitted *OmittedValue
	// Shadow is what listeners in shadow would have decided on the call
	// and did not (set on the results stage-5 observers receive).
	Shadow []ShadowDecision
}

// ShadowDecision is what a stage-1 listener or guard in shadow would have
// decided: its Deny, Ask or failure, which the host did not apply.
type ShadowDecision struct {
	// Stage is 1 (pre-execute) or 2 (guards).
	Stage  int    `json:"stage"`
	Plugin string `json:"plugin"`
	Rule   string `json:"rule,omitempty"`
	// Would is DENIED or ASK.
	Would  string `json:"would"`
	Reason string `json:"reason,omitempty"`
}

// OmittedValue stands for a result value too large to hand to an observer:
// enough to record the call and later check the value against a copy.
type OmittedValue struct {
	// Size is the value's size in bytes.
	Size int64
	// SHA256 is the value's digest, lower-case hex.
	SHA256 string
	// Head is the value's first bytes (not valid JSON on its own).
	Head []byte
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
	// Rule names the rule that decided, when the listener has named rules;
	// optional, read by explain, tests and audits.
	Rule string
	// Route names the approval route an Ask goes to: a route of the
	// deployment ("oncall"), or "caller" for the client that made the
	// call. Empty: the route whose tools pattern matches, else the caller.
	Route string
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
