package sdk

import (
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Allow lets the call proceed to the guards.
func Allow() Decision { return Decision{Verdict: wire.VerdictAllow} }

// Deny refuses the call with reason.
func Deny(reason string) Decision { return Decision{Verdict: wire.VerdictDeny, Reason: reason} }

// Ask puts question to the current approver; only an explicit approval
// proceeds.
func Ask(question string) Decision { return Decision{Verdict: wire.VerdictAsk, Reason: question} }

// AskVia is Ask put to the approvers of the deployment's approval route
// named route (an approval block's label), whatever the routes' tools
// match; "caller" is the client that made the call. The host denies an Ask
// naming a route the deployment does not declare. A plugin whose config
// names the route can give that value "format": "approval-route" in its
// config schema: host validate then checks the name.
func AskVia(route, question string) Decision {
	return Decision{Verdict: wire.VerdictAsk, Reason: question, Route: route}
}

// Pass has no opinion: a filter lets the host continue the chain; a wrapper
// returns what next returned. The zero Decision is not Pass: it is refused,
// so a forgotten answer fails closed.
func Pass() Decision { return Decision{Verdict: wire.VerdictPass} }

// Accept keeps the result as it is.
func Accept() Review { return Review{Verdict: wire.ReviewAccept} }

// Replace accepts the call with value as its new result (ok and the error stay
// as they were). A value that cannot be encoded as JSON blocks the result
// instead: a redaction that cannot be applied must not let the original pass.
func Replace(value any) Review {
	raw, err := encodeJSON(value)
	if err != nil {
		return Review{Verdict: wire.ReviewBlock, Feedback: "cannot encode replacement value: " + err.Error()}
	}
	return Review{Verdict: wire.ReviewReplace, Value: raw}
}

// Block refuses the result; feedback becomes the BLOCKED message.
func Block(feedback string) Review { return Review{Verdict: wire.ReviewBlock, Feedback: feedback} }

// PassReview has no opinion: a filter lets the host continue the chain; a
// wrapper returns what next returned. The zero Review is refused.
func PassReview() Review { return Review{Verdict: wire.ReviewPass} }

// Success is a stage-3 outcome with value as the result. A value that cannot
// be encoded becomes a TOOL_ERROR outcome.
func Success(value any) Outcome {
	raw, err := encodeJSON(value)
	if err != nil {
		return Failure(wire.CodeToolError, "cannot encode result: "+err.Error())
	}
	return Outcome{OK: true, Value: raw}
}

// Failure is a failed stage-3 outcome; code is usually wire.CodeToolError.
func Failure(code wire.Code, message string) Outcome {
	return Outcome{Error: &ToolError{Code: code, Message: message}}
}

// Approve lets an asked call proceed.
func Approve() Approval { return Approval{Approved: true} }

// Reject denies an asked call with reason.
func Reject(reason string) Approval { return Approval{Reason: reason} }
