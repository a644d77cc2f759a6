package pipeline

import (
	"encoding/json"
	"time"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// Code is the outcome of a call that did not succeed: the contract's own
// type, so that a code crosses a process boundary as it is.
type Code = wire.Code

// The seven codes, as exact strings (defined by the contract, package
// wire).
const (
	CodeUnknownTool      = wire.CodeUnknownTool
	CodeInvalidArguments = wire.CodeInvalidArguments
	CodeDenied           = wire.CodeDenied
	CodeBlocked          = wire.CodeBlocked
	CodeToolError        = wire.CodeToolError
	CodeToolTimeout      = wire.CodeToolTimeout
	CodeAborted          = wire.CodeAborted
)

// Result is what every call returns.
type Result struct {
	// ID identifies the call, as every stage saw it.
	ID string
	OK bool
	// Value is the tool's result (or a post-execute replacement). A remote
	// tool's value is a json.RawMessage.
	Value any
	// Error is set when OK is false.
	Error *Error
	// DecidedBy names the plugin (or rule) that denied or blocked the call.
	DecidedBy string
	// Duration is how long the call took, from lookup to the end of stage 4;
	// stage-5 observers see it.
	Duration time.Duration
	// Receipt is where an audit recorded the call, set by the host after
	// stage 5 when the deployment asks for receipts; nil otherwise. The
	// pipeline itself never sets it.
	Receipt *Receipt
	// Shadow is what the call's shadow listeners would have decided and
	// did not (see ShadowRule); nil when none would have objected.
	Shadow []ShadowDecision
}

// Receipt says where a stage-5 listener recorded a call: the audit log's
// seq and line hash, and which plugin wrote it.
type Receipt struct {
	Plugin string
	Seq    uint64
	Hash   string
}

// Error is a failed call's code and message. A tool body may return one to
// choose its code; any other error is a TOOL_ERROR.
type Error struct {
	Code    Code
	Message string
}

func (e *Error) Error() string { return string(e.Code) + ": " + e.Message }

// JSONValue is the result's value as JSON, the shape every front end
// serves: a remote tool's bytes as they came, anything else marshalled, and
// "null" for no value or one that cannot be marshalled.
func (r Result) JSONValue() json.RawMessage {
	switch v := r.Value.(type) {
	case nil:
	case json.RawMessage:
		if len(v) > 0 {
			return v
		}
	default:
		if b, err := json.Marshal(v); err == nil {
			return b
		}
	}
	return json.RawMessage("null")
}

// Code returns the result's error code, or "" when the call succeeded.
func (r Result) Code() Code {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

// OK returns a successful result holding v.
func OK(v any) Result { return Result{OK: true, Value: v} }

// Fail returns a failed result with code and message.
func Fail(code Code, message string) Result {
	return Result{Error: &Error{Code: code, Message: message}}
}

// denied is a DENIED result decided by who.
func denied(reason, who string) Result {
	r := Fail(CodeDenied, reason)
	r.DecidedBy = who
	return r
}

// normalize makes a result one of the two shapes callers rely on: OK with
// no error, or not OK with an error.
func (r Result) normalize(who string) Result {
	if r.OK && r.Error != nil {
		r.OK = false
	}
	if !r.OK && r.Error == nil {
		r.Error = &Error{Code: CodeToolError, Message: who + " returned a failure without an error"}
	}
	if !r.OK && !r.Error.Code.Known() {
		// Callers and audits rely on the seven codes; anything else is the
		// plugin's own failure.
		r.Error = &Error{Code: CodeToolError, Message: r.Error.Message}
	}
	return r
}

// decidedBy names owner as the decider of a DENIED or BLOCKED result that
// names none, so that every denial and block says who decided it, even one
// a tool body or a stage-3 wrapper chose.
func (r Result) decidedBy(owner string) Result {
	if r.DecidedBy == "" && (r.Code() == CodeDenied || r.Code() == CodeBlocked) {
		r.DecidedBy = owner
	}
	return r
}
