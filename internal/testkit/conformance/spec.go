package conformance

import "time"

// The specs below describe a test plugin as data, so that the same case can
// load it in-host (InHost turns each spec into a Go listener) or in a plugin
// process (a remote harness sends the spec, e.g. as the plugin's JSON
// configuration, and the plugin builds the same behaviours with the SDK).
//
// A plugin registers, in this order: its tools, pre-execute listeners,
// guards, execute wrappers, post-execute listeners, observers and approver.
// Across plugins, the plugin loaded first registers first (and its
// waterfall listeners are the outermost).
//
// What a case can only see inside the plugin (a body ran, its context was
// cancelled, an approver was asked) is written to a named log: every spec
// with a non-empty Log appends the entries its behaviour documents, and the
// case reads them with Host.Log. A log is written by one plugin only, so a
// remote harness can fetch it from that plugin's process.

// PluginSpec is one test plugin.
type PluginSpec struct {
	// Name is the plugin's name, which decides DecidedBy. "tools" and
	// "audit" are taken by the host.
	Name string `json:"name"`
	// Critical marks a policy plugin that fails closed while it is not
	// ACTIVE (SPEC §3). Only a harness with a supervisor acts on it; the
	// in-host harness ignores it.
	Critical  bool           `json:"critical,omitempty"`
	Tools     []ToolSpec     `json:"tools,omitempty"`
	Pre       []PreSpec      `json:"pre,omitempty"`
	Guards    []GuardSpec    `json:"guards,omitempty"`
	Exec      []ExecSpec     `json:"exec,omitempty"`
	Post      []PostSpec     `json:"post,omitempty"`
	Observers []ObserverSpec `json:"observers,omitempty"`
	Approver  *ApproverSpec  `json:"approver,omitempty"`
}

// Body is what a tool does when it is called.
type Body string

// Tool bodies. Every body logs "run" when it starts, then "done" when it
// returns by itself or "cancelled" when its context ended first.
const (
	// BodyNone registers the tool without an execute function (case 3).
	BodyNone Body = "none"
	// BodyAdd decodes {"a": number, "b": number} and returns a+b.
	BodyAdd Body = "add"
	// BodyEcho returns its arguments.
	BodyEcho Body = "echo"
	// BodyDescriptor returns the descriptor the call carries:
	// {"name", "description", "parameters"}.
	BodyDescriptor Body = "descriptor"
	// BodySleep sleeps ToolSpec.Sleep, honouring its context, then returns
	// "slept".
	BodySleep Body = "sleep"
	// BodyError fails with ToolSpec.Message.
	BodyError Body = "error"
	// BodyPanic panics with ToolSpec.Message.
	BodyPanic Body = "panic"
	// BodyScript makes its n-th run (from 1) follow Script[min(n, len)-1]:
	// sleep Step.Sleep honouring its context, then fail with Step.Error or
	// return "attempt n".
	BodyScript Body = "script"
)

// Step is one run of a BodyScript tool.
type Step struct {
	Sleep time.Duration `json:"sleep,omitempty"`
	// Error, when set, is the run's failure message.
	Error string `json:"error,omitempty"`
}

// ToolSpec is a tool. Fields are registered as written: an empty
// Description stays empty.
type ToolSpec struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	// Parameters is the JSON Schema of the arguments; empty is any object.
	Parameters  string        `json:"parameters,omitempty"`
	Timeout     time.Duration `json:"timeout,omitempty"`
	Idempotent  bool          `json:"idempotent,omitempty"`
	Destructive bool          `json:"destructive,omitempty"`
	Body        Body          `json:"body"`
	// Sleep is BodySleep's duration.
	Sleep time.Duration `json:"sleep,omitempty"`
	// IgnoreCancel makes BodySleep sleep its whole duration even when its
	// context ends: a body that does not listen (a timeout notifies, it
	// does not kill).
	IgnoreCancel bool `json:"ignore_cancel,omitempty"`
	// Message is BodyError's error and BodyPanic's panic value.
	Message string `json:"message,omitempty"`
	// Script is BodyScript's runs.
	Script []Step `json:"script,omitempty"`
	Log    string `json:"log,omitempty"`
}

// Pre is a stage-1 listener's behaviour.
type Pre string

// Stage-1 behaviours. Every listener logs "called" when it runs.
const (
	// PrePass calls next and returns what it returned.
	PrePass Pre = "pass"
	// PreAllow returns Allow without calling next.
	PreAllow Pre = "allow"
	// PreDenyAll returns Deny(Reason) without calling next.
	PreDenyAll Pre = "deny"
	// PreDenyWhenNegative returns Deny(Reason) when the number at Field is
	// negative, and otherwise calls next.
	PreDenyWhenNegative Pre = "deny-when-negative"
	// PreAsk returns Ask(Reason).
	PreAsk Pre = "ask"
	// PreOverrideAllow calls next, ignores its answer (even a Deny) and
	// returns Allow.
	PreOverrideAllow Pre = "override-allow"
	// PrePanic panics.
	PrePanic Pre = "panic"
	// PreError fails with the error Reason.
	PreError Pre = "error"
	// PreUnknown returns a decision that is none of Allow, Deny and Ask.
	PreUnknown Pre = "unknown"
	// PreHang blocks until its context ends (to be killed mid-call); over
	// the wire it is a wrapper (it could call next, and never does).
	PreHang Pre = "hang"
	// PreHangFilter is PreHang as a filter (one RPC, no next).
	PreHangFilter Pre = "hang-filter"
	// PreHangFirstFilter is a filter that blocks like PreHangFilter on the
	// first call its log records, across the plugin's processes, and
	// passes every later one: a call in flight when its process is killed,
	// which the next process serves. Test plugin only (Log required).
	PreHangFirstFilter Pre = "hang-first-filter"
	// PreHangFirstWrapper is PreHangFirstFilter as a wrapper: it blocks on
	// the first call and calls next on every later one. Test plugin only.
	PreHangFirstWrapper Pre = "hang-first-wrapper"
)

// PreSpec is a stage-1 listener.
type PreSpec struct {
	Behaviour Pre    `json:"behaviour"`
	Reason    string `json:"reason,omitempty"`
	Field     string `json:"field,omitempty"`
	// Sleep is how long the listener takes before it logs and decides,
	// honouring its context (so that calls are in flight in it).
	Sleep time.Duration `json:"sleep,omitempty"`
	// Tools limits the listener to these tools (an interest filter).
	Tools []string `json:"tools,omitempty"`
	Log   string   `json:"log,omitempty"`
}

// Guard is a stage-2 guard's behaviour.
type Guard string

// Guard behaviours. Every guard sleeps Sleep first (to let a concurrent
// evaluation answer out of order), then logs "called".
const (
	// GuardSilent passes.
	GuardSilent Guard = "silent"
	// GuardDenyAll returns Reason.
	GuardDenyAll Guard = "deny"
	// GuardDenyWhenGreater returns Reason when the number at Field is
	// greater than Limit.
	GuardDenyWhenGreater Guard = "deny-when-greater"
	// GuardDenyWhenEqual returns Reason when the string at Field equals
	// Value.
	GuardDenyWhenEqual Guard = "deny-when-equal"
	// GuardPanic panics.
	GuardPanic Guard = "panic"
	// GuardError fails with the error Reason.
	GuardError Guard = "error"
	// GuardHang blocks until its context ends (to be killed mid-call).
	GuardHang Guard = "hang"
	// GuardHangFirst blocks like GuardHang on the first call its log
	// records, across the plugin's processes, and passes every later one:
	// a call in flight when its process is killed, which the next process
	// serves. Test plugin only (Log required).
	GuardHangFirst Guard = "hang-first"
)

// GuardSpec is a stage-2 guard.
type GuardSpec struct {
	Behaviour Guard         `json:"behaviour"`
	Reason    string        `json:"reason,omitempty"`
	Field     string        `json:"field,omitempty"`
	Limit     float64       `json:"limit,omitempty"`
	Value     string        `json:"value,omitempty"`
	Sleep     time.Duration `json:"sleep,omitempty"`
	Tools     []string      `json:"tools,omitempty"`
	Log       string        `json:"log,omitempty"`
}

// Exec is a stage-3 wrapper's behaviour.
type Exec string

// Stage-3 behaviours.
const (
	// ExecRecord logs "start", calls next, then logs "end ok" or
	// "end <CODE>".
	ExecRecord Exec = "record"
	// ExecShortCircuit logs "called" and returns a success holding Value
	// (JSON) without calling next.
	ExecShortCircuit Exec = "short-circuit"
	// ExecHang logs "called" and blocks until its context ends, never
	// calling next; over the wire it is a wrapper.
	ExecHang Exec = "hang"
	// ExecHangFilter is ExecHang as a filter (one RPC, no next).
	ExecHangFilter Exec = "hang-filter"
)

// ExecSpec is a stage-3 wrapper.
type ExecSpec struct {
	Behaviour Exec `json:"behaviour"`
	// Value is ExecShortCircuit's result, as JSON.
	Value string   `json:"value,omitempty"`
	Tools []string `json:"tools,omitempty"`
	Log   string   `json:"log,omitempty"`
}

// Post is a stage-4 listener's behaviour.
type Post string

// Stage-4 behaviours. Every listener logs "called" when it runs.
const (
	// PostPass calls next and returns what it returned.
	PostPass Post = "pass"
	// PostReplace accepts, replacing the value with Value (JSON).
	PostReplace Post = "replace"
	// PostBlock blocks with the feedback Reason.
	PostBlock Post = "block"
	// PostError fails with the error Reason.
	PostError Post = "error"
	// PostPanic panics.
	PostPanic Post = "panic"
	// PostWrapPass is PostPass as a wrapper over the wire: its Sleep is its
	// own time, before it calls next.
	PostWrapPass Post = "wrap-pass"
	// PostHang blocks until its context ends, never calling next; over the
	// wire it is a wrapper.
	PostHang Post = "hang"
	// PostHangFilter is PostHang as a filter (one RPC, no next).
	PostHangFilter Post = "hang-filter"
)

// PostSpec is a stage-4 listener.
type PostSpec struct {
	Behaviour Post   `json:"behaviour"`
	Value     string `json:"value,omitempty"`
	Reason    string `json:"reason,omitempty"`
	// Sleep is how long the listener takes before it logs and reviews,
	// honouring its context.
	Sleep time.Duration `json:"sleep,omitempty"`
	Tools []string      `json:"tools,omitempty"`
	Log   string        `json:"log,omitempty"`
}

// Observe is a stage-5 observer's behaviour.
type Observe string

// Stage-5 behaviours.
const (
	// ObserveRecord logs "<tool> ok" or "<tool> <CODE>".
	ObserveRecord Observe = "record"
	// ObservePanic logs like ObserveRecord, then panics.
	ObservePanic Observe = "panic"
	// ObserveRecordID logs "<call id> <tool> ok" or "<call id> <tool> <CODE>",
	// for tests that count each call's results.
	ObserveRecordID Observe = "record-id"
)

// ObserverSpec is a stage-5 observer.
type ObserverSpec struct {
	Behaviour Observe `json:"behaviour"`
	// Sleep is how long the observer takes before it logs (a slow audit
	// sink, so that results queue up behind it).
	Sleep time.Duration `json:"sleep,omitempty"`
	Tools []string      `json:"tools,omitempty"`
	Log   string        `json:"log,omitempty"`
	// CrashOn names a tool whose result makes the observer end its
	// process before it logs (a result the observer cannot survive).
	CrashOn string `json:"crash_on,omitempty"`
}

// Approve is an approver's behaviour.
type Approve string

// Approver behaviours. Every approver logs "asked <reason>" when asked.
const (
	ApproveYes Approve = "approve"
	// ApproveNo answers anything but an approval.
	ApproveNo Approve = "refuse"
	// ApproveError fails with the error Reason.
	ApproveError Approve = "error"
	// ApproveHang blocks until its context ends; its log then gets
	// "cancelled".
	ApproveHang Approve = "hang"
)

// ApproverSpec is an approver.
type ApproverSpec struct {
	Behaviour Approve `json:"behaviour"`
	Reason    string  `json:"reason,omitempty"`
	Log       string  `json:"log,omitempty"`
}
