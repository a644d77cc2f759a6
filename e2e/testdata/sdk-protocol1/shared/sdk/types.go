package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// The values that cross the wire, as package wire defines them.
type (
	// Execution is the frozen call every stage sees.
	Execution = wire.Execution
	// ToolDescriptor is what the host knows about a tool.
	ToolDescriptor = wire.ToolDescriptor
	// ToolResult is the final result of a call through the pipeline.
	ToolResult = wire.ToolResult
	// ToolError is the failure half of a result.
	ToolError = wire.ToolError
	// Outcome is what stage 3 (the tool and its wrappers) produced.
	Outcome = wire.Outcome
	// Decision is a stage-1 answer; build it with Allow, Deny, Ask or Pass.
	Decision = wire.Decision
	// Review is a stage-4 answer; build it with Accept, Replace, Block or
	// PassReview.
	Review = wire.Review
	// Approval is an approver's answer; build it with Approve or Reject.
	Approval = wire.Approval
	// Principal is who a call is made for (Call.Principal); its Matches
	// reads a selector as the host does ("group:readers", "user:alice").
	Principal = wire.Principal
)

// Call is the execution a handler is asked about. Its fields are frozen:
// arguments cannot be changed by any stage.
type Call struct {
	Execution
}

// Bind decodes the call's JSON arguments into v. The host has already checked
// them against the tool's parameters schema.
func (c *Call) Bind(v any) error {
	if err := json.Unmarshal(c.Arguments, v); err != nil {
		return fmt.Errorf("arguments of %s: %w", c.Name, err)
	}
	return nil
}

// Tool is a tool the plugin offers. Name, Description and Execute are
// required.
type Tool struct {
	// Name is unique across the host.
	Name string
	// Description tells people and models what the tool does.
	Description string
	// Parameters is the JSON Schema of the arguments, as JSON text; empty
	// means {"type":"object"}.
	Parameters string
	// Destructive hints that the tool changes or deletes something.
	Destructive bool
	// ReadOnly hints that the tool only reads.
	ReadOnly bool
	// Idempotent hints that a repeated call has the effect of one.
	Idempotent bool
	// Timeout is enforced by the host's timeout policy; 0 means none.
	Timeout time.Duration
	// Execute runs the tool. Its result is encoded as JSON (a
	// json.RawMessage is sent as is); an error becomes TOOL_ERROR with its
	// message. ctx is done when the host cancels the call or its deadline
	// passes.
	Execute func(ctx context.Context, call *Call) (any, error)
}

// Guard is a stage-2 rule: it can only deny.
type Guard struct {
	// Name identifies the rule in audits (decided_by); optional.
	Name string
	// Tools limits the guard to calls of these tools; empty means all.
	Tools []string
	// Check returns a reason to deny, or "" to stay out of the way. An error
	// or a panic denies (fail closed).
	Check func(ctx context.Context, call *Call) (reason string, err error)
}

// NextDecision runs the rest of the stage-1 chain and returns its decision.
// It may be called more than once.
type NextDecision func(ctx context.Context) (Decision, error)

// PreExecuteListener joins stage 1 (tools/pre-execute). Set exactly one of
// Filter and Wrap.
type PreExecuteListener struct {
	// Name identifies the listener in audits (decided_by); optional.
	Name string
	// Tools limits the listener to calls of these tools; empty means all.
	Tools []string
	// Filter answers in one RPC: Allow, Deny, Ask, or Pass to let the host
	// continue the chain.
	Filter func(ctx context.Context, call *Call) (Decision, error)
	// Wrap holds the rest of the chain: next runs it (through the host) and
	// returns its decision, which Wrap may inspect and override. Returning
	// Pass returns what next returned, calling it first if Wrap did not.
	Wrap func(ctx context.Context, call *Call, next NextDecision) (Decision, error)
}

// NextOutcome runs the rest of the stage-3 chain, down to the tool itself,
// and returns its outcome. It may be called more than once (a retry).
type NextOutcome func(ctx context.Context) (Outcome, error)

// ExecuteListener joins stage 3 (tools/execute), around the tool call. Set
// exactly one of Filter and Wrap.
type ExecuteListener struct {
	// Name identifies the listener in logs; optional.
	Name string
	// Tools limits the listener to calls of these tools; empty means all.
	Tools []string
	// Filter answers in one RPC: an outcome that replaces the rest of the
	// chain (the tool does not run), or nil to let the host continue it.
	Filter func(ctx context.Context, call *Call) (*Outcome, error)
	// Wrap holds the rest of the chain, down to the tool: timeouts, retries,
	// metrics. Not calling next means the tool does not run.
	Wrap func(ctx context.Context, call *Call, next NextOutcome) (Outcome, error)
}

// NextReview runs the rest of the stage-4 chain and returns its review.
type NextReview func(ctx context.Context) (Review, error)

// PostExecuteListener joins stage 4 (tools/post-execute). Set exactly one of
// Filter and Wrap.
type PostExecuteListener struct {
	// Name identifies the listener in audits (decided_by); optional.
	Name string
	// Tools limits the listener to calls of these tools; empty means all.
	Tools []string
	// Filter answers in one RPC: Accept, Replace, Block, or PassReview.
	Filter func(ctx context.Context, call *Call, out Outcome) (Review, error)
	// Wrap holds the rest of the chain; returning PassReview returns what
	// next returned, calling it first if Wrap did not.
	Wrap func(ctx context.Context, call *Call, out Outcome, next NextReview) (Review, error)
}

// ResultListener joins stage 5 (tools/result): it sees the final result of
// every call, in order, and cannot change it. The caller does not wait for it.
type ResultListener struct {
	// Name identifies the listener in logs; optional.
	Name string
	// Tools limits the listener to calls of these tools; empty means all.
	Tools []string
	// Observe sees one result. ctx ends when the host closes the result
	// stream; a panic is logged and the next result still arrives.
	Observe func(ctx context.Context, call *Call, result ToolResult)
}

// Approver answers the questions stage-1 listeners Ask. The newest approver
// in the host decides.
type Approver struct {
	// Name identifies the approver in audits (decided_by); optional.
	Name string
	// Approve answers question about call. Only Approve() lets the call
	// proceed; Reject, an error or a panic denies it.
	Approve func(ctx context.Context, call *Call, question string) (Approval, error)
}

// Method is one method of a provided service. Its result is encoded as JSON.
type Method func(ctx context.Context, args json.RawMessage) (any, error)

// Service is a named service the plugin provides to plugins that inject it.
type Service struct {
	// Name is what other plugins put in their Inject list.
	Name string
	// Methods by name.
	Methods map[string]Method
}

// Contribution is a value added to an extension point of the host.
type Contribution struct {
	// Point names the extension point.
	Point string
	// Key identifies the value within the point; optional.
	Key string
	// Order sorts contributions; lower first.
	Order int
	// Value is encoded as JSON.
	Value any
}
