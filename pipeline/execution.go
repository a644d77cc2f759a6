package pipeline

import (
	"encoding/json"
	"sync/atomic"
	"unsafe"
)

// Execution is one call as every stage sees it. It is frozen: its fields are
// read through methods and the arguments are canonical JSON held as a string,
// so history, audit and execution agree on what ran.
type Execution struct {
	id        string
	name      string
	caller    string
	tool      *ToolInfo
	args      string
	principal Principal
	// dryRun marks an explained call (Tools.Explain): nothing executes.
	dryRun bool
	// shadows are the shadow rules in force when the call started (nil:
	// none), and shadowNotes what shadow listeners would have decided.
	shadows     *shadowSet
	shadowNotes shadowNotes
	// askRoute is the approval route the call's Ask named (Decision.Route),
	// set before the approver is called.
	askRoute string
	// approval is the record of how an Ask routed to approvers ended
	// (SetApproval), JSON; nil when none was.
	approval atomic.Pointer[string]
	// elicitations records the questions put to the caller during the
	// call (elicitations.go).
	elicitations elicitations
	// visibility marks a visibility question (Tools.Visible): a dry run
	// without arguments.
	visibility bool
	// visibleOnly: the call sees only the tools shown to its principal
	// (WithVisibleOnly).
	visibleOnly bool
}

// NewExecution builds an execution for code that runs stages itself, such
// as the host-side end of a remote wrapper. args must be canonical JSON.
func NewExecution(id, name, caller string, tool *ToolInfo, args string) *Execution {
	return &Execution{id: id, name: name, caller: caller, tool: tool, args: args}
}

// Principal is who the call is made for (see WithPrincipal); Anonymous
// when the caller did not say. Read only: Attributes is shared.
func (e *Execution) Principal() Principal { return e.principal }

// DryRun reports that the call is explained, not made (Tools.Explain): a
// listener answers what it would decide and acts on nothing (no side
// effect, no question to a person). Remote listeners see it as
// Execution.dry_run.
func (e *Execution) DryRun() bool { return e.dryRun }

// Visibility reports that the call is the visibility question
// (Tools.Visible): a dry run without arguments, which asks whether any call
// of the tool by the principal could be allowed or asked. A listener that
// answers it (registered as one that does, see Registrar.OnPreExecuteVisible)
// denies only when it would deny every call of the tool by the principal,
// whatever the arguments; otherwise it answers as for a call it may allow
// (or passes to next). Remote listeners see it as Execution.visibility.
func (e *Execution) Visibility() bool { return e.visibility }

// ID identifies the call.
func (e *Execution) ID() string { return e.id }

// Name is the tool's name as the caller asked for it.
func (e *Execution) Name() string { return e.name }

// Caller is the client or plugin that made the call.
func (e *Execution) Caller() string { return e.caller }

// Tool is the tool's descriptor; nil when no tool has that name. Read only.
func (e *Execution) Tool() *ToolInfo { return e.tool }

// Arguments returns a copy of the canonical JSON arguments.
func (e *Execution) Arguments() json.RawMessage { return json.RawMessage(e.args) }

// ArgumentsJSON returns the canonical JSON arguments without copying.
func (e *Execution) ArgumentsJSON() string { return e.args }

// Decode unmarshals the arguments into v; each call decodes afresh, so no
// listener can change what another sees.
func (e *Execution) Decode(v any) error {
	if e.args == "" {
		return json.Unmarshal([]byte("{}"), v)
	}
	// json.Unmarshal only reads its input, so the string's bytes are not copied.
	return json.Unmarshal(unsafe.Slice(unsafe.StringData(e.args), len(e.args)), v)
}

// Approval is the JSON record of how the call's Ask was decided by
// approvers other than the caller (route, each decision, quorum or
// timeout), or "" when it was not: observers (the audit) record it.
func (e *Execution) Approval() string {
	if p := e.approval.Load(); p != nil {
		return *p
	}
	return ""
}

// AskRoute is the approval route the call's Ask named (Decision.Route):
// a route of the deployment, RouteCaller, or "" when it named none. The
// approver reads it.
func (e *Execution) AskRoute() string { return e.askRoute }

// SetApproval records how the call's Ask was decided (see Approval). The
// approver calls it before it answers; a remote end sets what it was sent.
func (e *Execution) SetApproval(record string) { e.approval.Store(&record) }
