package sdk

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
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
	// OmittedValue stands for a result value larger than the observing
	// plugin's max_result_bytes (ToolResult.Omitted).
	OmittedValue = wire.OmittedValue
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
	// anyArgs is set by ForAnyArguments (see anyargs.go).
	anyArgs atomic.Bool
}

// DryRun reports that the host explains the call rather than makes it
// (`host explain`, `host test`): answer what you would decide, and act on
// nothing (no side effect, no question to a person). Only a plugin whose
// Plugin.DryRun is set is sent such a call.
func (c *Call) DryRun() bool { return c.Execution.DryRun }

// Visibility reports that the host asks the visibility question rather
// than explains a call: could any call of this tool by this principal be
// allowed or asked? The call has no arguments. Deny (or, from a guard,
// give a reason) only when every call of the tool by the principal would
// be denied, whatever the arguments; otherwise answer as for a call you
// may allow. DryRun is set too. Only a plugin whose Plugin.Visibility is
// set is sent such a call.
func (c *Call) Visibility() bool { return c.Execution.Visibility }

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
	// Notes are shown beside the tool (host tools): for a tool bridged from
	// a source the plugin does not vouch for, what the source claimed and
	// the checks its definition failed.
	Notes []string
	// Held, when set, registers the tool held absent for this reason: the
	// host lists it but never serves or calls it, and keeps its name for
	// this plugin. Execute still runs for nothing: an older host that does
	// not know Held would call it, so a held tool's Execute should refuse.
	Held string
	// Definition is the pin of the tool's definition as its source gave it,
	// which `host lock` records.
	Definition string
	// OwnerPrefix registers the tool as OWNER_Name, OWNER being the name
	// the deployment gave this plugin (which the plugin is not told).
	OwnerPrefix bool
	// Kind is "" for a tool; KindResources, KindResource or KindPrompt
	// offer a server's resources and prompts instead (see resources.go).
	Kind string
	// Execute runs the tool. Its result is encoded as JSON (a
	// json.RawMessage is sent as is); an error becomes TOOL_ERROR with its
	// message. ctx is done when the host cancels the call or its deadline
	// passes.
	Execute func(ctx context.Context, call *Call) (any, error)
}

// Guard is a stage-2 rule: it can only deny.
type Guard struct {
	// Name identifies the rule in audits (decided_by) and is sent as the
	// rule of every answer the guard gives (GuardResponse.rule), which
	// `host explain` and `host test` show; optional.
	Name string
	// Tools limits the guard to calls of these tools; empty means all.
	Tools []string
	// Check returns a reason to deny, or "" to stay out of the way. An error
	// or a panic denies (fail closed).
	Check func(ctx context.Context, call *Call) (reason string, err error)
	// Shadow registers the guard in shadow mode (a rule its configuration
	// marks mode = "shadow"): the host asks it on every call as usual but
	// does not apply its denial or failure, which it records on the call
	// (the audit line's shadow member, the shadow metric, host explain),
	// as for a deployment's shadow block. It needs a Name.
	Shadow bool
	// EnforceFor, with Shadow, is a canary: the principals these selectors
	// name ("group:canary", "user:ann", "*") have the rule enforced.
	EnforceFor []string
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
	// stream; a panic is logged and the next result still arrives. Set
	// exactly one of Observe and Record.
	Observe func(ctx context.Context, call *Call, result ToolResult)
	// Record is Observe for a listener that records results somewhere (an
	// audit log): it also says where it recorded this one, ok false when it
	// did not. When the deployment asks for receipts, the host hands the
	// receipt back to the caller with the call's result.
	Record func(ctx context.Context, call *Call, result ToolResult) (r Receipt, ok bool)
	// Flush, when set, is called once every result of a batch the host
	// sent has been given to Observe or Record, before the host is told
	// the batch was handled: a listener that makes what it recorded
	// durable once for many results (one fsync for the lines of a batch)
	// does it here. An error leaves the batch unacknowledged: the host
	// sends a critical plugin's results again.
	Flush func(ctx context.Context) error
}

// Receipt is where a result listener recorded a call: the audit log's seq
// and the line's hash.
type Receipt struct {
	Seq  uint64
	Hash string
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
