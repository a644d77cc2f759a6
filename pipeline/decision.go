package pipeline

import "github.com/plugkit-go/plugkit/shared/wire"

// Verdict is a pre-execute listener's answer: the contract's own type, so
// that a verdict crosses a process boundary as it is.
type Verdict = wire.Verdict

// The verdicts a listener answers with. The zero Verdict is not valid: a
// listener that returns it (or wire.VerdictPass, which in the pipeline is
// calling next) is treated as having failed, and the call is denied.
const (
	VerdictAllow = wire.VerdictAllow
	VerdictDeny  = wire.VerdictDeny
	VerdictAsk   = wire.VerdictAsk
)

// Decision is what a stage-1 listener returns.
type Decision struct {
	Verdict Verdict
	// Reason explains a Deny, or is the question an Ask puts to the approver.
	Reason string
	// DecidedBy is filled by the pipeline with the plugin that decided.
	DecidedBy string
	// Rule names the rule that decided, when the listener has named rules;
	// optional, read by Explain.
	Rule string
	// Route names the approval route an Ask goes to: one of the
	// deployment's routes, or RouteCaller. Empty leaves it to the approver
	// (the host: a route whose tools pattern matches, else the caller).
	Route string
}

// RouteCaller is the route of the client that made the call, named
// explicitly.
const RouteCaller = "caller"

// Allow lets the call go on to the guards.
func Allow() Decision { return Decision{Verdict: VerdictAllow} }

// Deny refuses the call with reason.
func Deny(reason string) Decision { return Decision{Verdict: VerdictDeny, Reason: reason} }

// Ask puts reason to the current approver; only an explicit approval proceeds.
func Ask(reason string) Decision { return Decision{Verdict: VerdictAsk, Reason: reason} }

// ReviewAction is a post-execute listener's answer: the contract's
// stage-4 verdict.
type ReviewAction = wire.ReviewVerdict

// The answers a listener reviews with. The zero ReviewAction is not valid
// (nor wire.ReviewPass, which in the pipeline is calling next): the call
// is blocked.
const (
	ReviewAccept  = wire.ReviewAccept
	ReviewReplace = wire.ReviewReplace
	ReviewBlock   = wire.ReviewBlock
)

// Review is what a stage-4 listener returns.
type Review struct {
	Action ReviewAction
	// Value replaces the result's value when Action is ReviewReplace.
	Value any
	// Feedback is the message of a Block.
	Feedback string
	// DecidedBy is filled by the pipeline with the plugin that reviewed.
	DecidedBy string
}

// Accept keeps the result as it is.
func Accept() Review { return Review{Action: ReviewAccept} }

// AcceptReplacing keeps the result's ok and error but swaps its value.
func AcceptReplacing(v any) Review { return Review{Action: ReviewReplace, Value: v} }

// Block rejects the result; the caller gets BLOCKED with feedback.
func Block(feedback string) Review { return Review{Action: ReviewBlock, Feedback: feedback} }
