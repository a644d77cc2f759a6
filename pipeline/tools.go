package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit-go/plugkit/kernel"
)

// ServiceName is the name under which the kernel provides the service.
const ServiceName = "tools"

// The kernel points that hold the registry and the stages. Each is also the
// stage's event name.
const (
	PointTools       = "tools"
	PointGuards      = "tools/guards"
	PointApprovers   = "tools/approvers"
	PointPreExecute  = "tools/pre-execute"
	PointExecute     = "tools/execute"
	PointPostExecute = "tools/post-execute"
	PointResult      = "tools/result"
	PointHolds       = "tools/holds"
	PointAbsent      = "tools/absent"
)

var allPoints = []string{PointTools, PointGuards, PointApprovers, PointPreExecute, PointExecute, PointPostExecute, PointResult, PointHolds, PointAbsent}

// Options configure the service.
type Options struct {
	// ApprovalTimeout bounds how long an Ask waits for the approver; an
	// unanswered question is a denial. Zero means one minute.
	ApprovalTimeout time.Duration
	// ApprovalTimeoutFor, when set, may give a tool's Ask a bound of its
	// own (an approval route's timeout); route is the one the Ask named
	// (Decision.Route), maybe empty; 0 keeps ApprovalTimeout.
	ApprovalTimeoutFor func(tool, route string) time.Duration
	// Logger receives contained failures (observers, undo). Nil discards.
	Logger hclog.Logger
	// OnApproval, when set, is told how each Ask ended (for metrics): one
	// of the Approval outcomes. It must not block.
	OnApproval func(tool string, outcome Approval)
	// OnCall, when set, is given every call once stage 5 is over: its
	// result and, for one call in StageSample, how long each stage took
	// (for metrics; the other calls' times are all negative). It must not
	// block.
	OnCall func(e *Execution, r Result, times StageTimes)
	// StageSample is how often a call's stages are timed for OnCall: one
	// call in StageSample. Reading the clock at every stage boundary costs
	// more than the rest of the metrics together (a clock read is 50-100 ns
	// on a virtual machine), so by default one call in
	// DefaultStageSample is timed; 1 times every call.
	StageSample uint64
	// MaxDescriptionBytes bounds a tool's description: a longer one is
	// registered held absent, with the reason, its description cut to
	// the bound. Zero means DefaultMaxDescriptionBytes.
	MaxDescriptionBytes int
	// Tracer, when set, gives every call a span with a child per stage it
	// reaches; what a stage calls (a plugin's RPC) is that stage's child.
	// Nil: no spans, and nothing spent on them.
	Tracer trace.Tracer
	// MaxArgumentBytes bounds a call's arguments, checked first in stage
	// 0 so that no listener (a critical plugin with a memory limit) is
	// handed more; a tool registered with a bound of its own uses that.
	// Zero means DefaultMaxArgumentBytes.
	MaxArgumentBytes int
}

// DefaultMaxArgumentBytes is Options.MaxArgumentBytes when it is 0: the
// MCP SDK's request body limit, which bounded MCP calls before.
const DefaultMaxArgumentBytes = 4 << 20

// DefaultMaxDescriptionBytes is Options.MaxDescriptionBytes when it is 0:
// 16 KiB, far above any real tool's description, and far below what a
// client would send a model in every tools/list.
const DefaultMaxDescriptionBytes = 16 << 10

// DefaultStageSample is Options.StageSample when it is 0.
const DefaultStageSample = 8

// Approval is how an Ask ended.
type Approval string

// The outcomes of an Ask.
const (
	Approved         Approval = "approved"
	Refused          Approval = "refused"
	ApprovalFailed   Approval = "failed"      // the approver failed
	ApprovalTimedOut Approval = "timed_out"   // no answer within the approval timeout
	NoApprover       Approval = "no_approver" // nobody to ask
	AskCancelled     Approval = "cancelled"   // the caller gave up while it waited
)

// Tools is the tool registry and pipeline. Use New, then load Plugin() into
// the kernel so that plugins can inject it.
type Tools struct {
	k    *kernel.Kernel
	opts Options
	log  hclog.Logger

	snap     atomic.Pointer[snapshot]
	rebuild  sync.Mutex
	retired  []*snapshot // replaced snapshots that calls may still hold (guarded by rebuild)
	idPrefix string
	seq      atomic.Uint64
	inflight atomic.Int64 // calls in Execute now, whatever their snapshot
	// naming makes a registration's name check and the registration one
	// step (see checkNames).
	naming sync.Mutex
	// shadows are the shadow rules (SetShadow); nil when there are none.
	shadows atomic.Pointer[shadowSet]
	// merged is the deployment's shadow rules with the current snapshot's
	// declared ones (shadow_declared.go).
	merged mergedCache
	// seen caches the visible sets (visibleset.go).
	seen visibleCache
}

// InFlight is how many calls are running now, stages 0 to 5.
func (t *Tools) InFlight() int64 { return t.inflight.Load() }

// New returns the tools service over k's points.
func New(k *kernel.Kernel, opts Options) *Tools {
	if opts.ApprovalTimeout <= 0 {
		opts.ApprovalTimeout = time.Minute
	}
	if opts.StageSample == 0 {
		opts.StageSample = DefaultStageSample
	}
	if opts.MaxArgumentBytes <= 0 {
		opts.MaxArgumentBytes = DefaultMaxArgumentBytes
	}
	if opts.MaxDescriptionBytes <= 0 {
		opts.MaxDescriptionBytes = DefaultMaxDescriptionBytes
	}
	log := opts.Logger
	if log == nil {
		log = k.Logger().Named(ServiceName)
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	t := &Tools{k: k, opts: opts, log: log, idPrefix: hex.EncodeToString(b[:]) + "-"}
	k.Points().DeclareUnique(PointTools)
	t.compile()
	return t
}

// Close releases the service. Nothing needs stopping: the pipeline reads
// the points when it is used (see compile).
func (t *Tools) Close() {}

// Plugin is the kernel plugin that provides the service as "tools".
func (t *Tools) Plugin() kernel.Plugin {
	return kernel.Plugin{
		Name: ServiceName,
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			_, err := s.Provide(ServiceName, t)
			return err
		},
	}
}

// Bind gives a consumer plugin its Registrar (kernel.Binder).
func (t *Tools) Bind(s *kernel.Scope) any { return &Registrar{t: t, s: s} }

// List returns the registered tools by name.
func (t *Tools) List() []ToolInfo {
	s := t.current()
	out := make([]ToolInfo, 0, len(s.tools))
	for _, r := range s.tools {
		out = append(out, r.info.clone())
	}
	slices.SortFunc(out, func(a, b ToolInfo) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return out
}

// Lookup returns one tool's descriptor.
func (t *Tools) Lookup(name string) (ToolInfo, bool) {
	r, ok := t.current().tools[name]
	if !ok {
		return ToolInfo{}, false
	}
	return r.info.clone(), true
}

// Hold makes every call DENIED, decided by who, with reason, until the
// returned release is called. The host holds the pipeline while a critical
// plugin is not active, so that a missing policy fails closed.
func (t *Tools) Hold(who, reason string) (release func()) {
	// Holds live in a point like everything else, owned by the kernel.
	remove, _ := t.k.Points().Add(PointHolds, who, 0, hold{who: who, reason: reason}, who)
	var once sync.Once
	return func() { once.Do(remove) }
}

type hold struct{ who, reason string }

// Observe adds a stage-5 observer that belongs to the host, on behalf of
// owner, until the returned remove is called; tools, when given, limits it.
// The host keeps a critical plugin's observer this way, so that it outlives
// the plugin's process and sees the calls made while the plugin is down.
func (t *Tools) Observe(owner string, fn ResultFunc, tools ...string) (remove func()) {
	rm, _ := t.k.Points().Add(PointResult, "", 0, newEntry(fn, owner, tools), owner)
	var once sync.Once
	return func() { once.Do(rm) }
}

// refusal turns the kernel's refusal of a reserved name into the error a
// plugin author reads, and logs it the first time that plugin is refused
// that name while it is reserved (a bridged server that re-sends its list
// every few milliseconds is logged once, not at every try).
func (t *Tools) refusal(claimant, name string, err error) error {
	var re *kernel.ReservedError
	if !errors.As(err, &re) {
		return err
	}
	if re.First {
		t.log.Warn("tool not registered: its name is reserved for the plugin that declared it",
			"tool", name, "plugin", claimant, "reserved_for", re.Owner, "why", re.Why)
	}
	return fmt.Errorf("register tool %q: the name belongs to plugin %s, which declared it and is not active now (%s); %s may not take it",
		name, re.Owner, re.Why, claimant)
}

// nextID numbers a new call: its id, and its sequence number.
func (t *Tools) nextID() (string, uint64) {
	// Built in a stack buffer so that the id costs one allocation, not two.
	var buf [32]byte
	n := t.seq.Add(1)
	b := append(buf[:0], t.idPrefix...)
	return string(strconv.AppendUint(b, n, 10)), n
}

// snapshot is the compiled pipeline: every stage's listeners in order.
type snapshot struct {
	// inflight counts the calls running on this snapshot (see acquire).
	inflight atomic.Int64
	// gen and versions are the points' generation and versions it was
	// built from (see compile).
	gen      uint64
	versions map[string]uint64

	tools  map[string]*registered
	absent map[string]absence // tool → why it is missing
	// nameIdx is the lookalike index of tools and absent (see names),
	// built on first use.
	nameIdx  atomic.Pointer[nameIndex]
	holds    []hold
	pre      []entry[PreExecuteFunc]
	guards   []entry[GuardFunc]
	exec     []entry[ExecuteFunc]
	post     []entry[PostExecuteFunc]
	result   []entry[ResultFunc]
	approver *entry[ApproverFunc]
	// declared is the shadow rules of the guards registered in shadow;
	// nil when there are none.
	declared *shadowSet
	// maxArgs is the largest argument bound of any tool (at least the
	// default): what a front end may read of a call's body.
	maxArgs int
}

// entry is one listener, its owner and the tools it cares about.
type entry[F any] struct {
	fn    F
	owner string
	only  map[string]struct{} // nil: every tool
	// concurrent: the guard may run at the same time as the call's other
	// concurrent guards (see Registrar.ConcurrentGuard).
	concurrent bool
	// start, when set, is the concurrent guard fn in two steps
	// (Registrar.StartedGuard).
	start GuardStart
	// visible: fn answers the visibility question (Execution.Visibility);
	// a listener without it counts as one that may allow.
	visible bool
	// shadow, when set, puts the guard's rule in shadow: its plugin
	// registered it so (Registrar.StartedGuardInShadow).
	shadow *ShadowRule
}

func (e *entry[F]) wants(tool string) bool {
	if e.only == nil {
		return true
	}
	_, ok := e.only[tool]
	return ok
}

func newEntry[F any](fn F, owner string, tools []string) entry[F] {
	e := entry[F]{fn: fn, owner: owner}
	if len(tools) > 0 {
		e.only = make(map[string]struct{}, len(tools))
		for _, n := range tools {
			e.only[n] = struct{}{}
		}
	}
	return e
}

func collect[F any](all map[string][]kernel.Contribution, point string) []entry[F] {
	var out []entry[F]
	for _, c := range all[point] {
		if e, ok := c.Value.(entry[F]); ok {
			out = append(out, e)
		}
	}
	return out
}

// compile brings the snapshot up to date with the points, if they changed
// since it was built. It runs lazily, when a call, List, Lookup or Quiesce
// finds the points newer than the snapshot: n registrations in a row (a
// plugin's apply step, a bridged server's list) cost one compile, not n.
// Only the parts whose points changed are rebuilt; the rest is shared with
// the previous snapshot (a new tool does not rebuild the listener chains,
// a new listener does not rebuild the tool table). Calls in flight keep the
// snapshot they started with.
func (t *Tools) compile() {
	t.rebuild.Lock()
	defer t.rebuild.Unlock()
	prev := t.snap.Load()
	if prev != nil && prev.gen == t.k.Points().Generation() {
		return
	}
	var known map[string]uint64
	s := &snapshot{}
	if prev != nil {
		known = prev.versions
		*s = snapshot{
			tools: prev.tools, absent: prev.absent, holds: prev.holds, maxArgs: prev.maxArgs,
			pre: prev.pre, guards: prev.guards, exec: prev.exec, post: prev.post, result: prev.result,
			approver: prev.approver, declared: prev.declared,
		}
	}
	// One read of every changed point, so that a reload's swap is seen whole.
	gen, all, versions := t.k.Points().Changed(known, allPoints...)
	s.gen, s.versions = gen, versions
	_, toolsChanged := all[PointTools]
	_, absentChanged := all[PointAbsent]
	if prev != nil && !toolsChanged && !absentChanged {
		s.nameIdx.Store(prev.nameIdx.Load())
	}
	if list, ok := all[PointTools]; ok {
		s.tools = make(map[string]*registered, len(list))
		s.maxArgs = t.opts.MaxArgumentBytes
		for _, c := range list {
			if r, ok := c.Value.(*registered); ok {
				s.tools[r.info.Name] = r
				s.maxArgs = max(s.maxArgs, r.maxArgs)
			}
		}
	}
	if list, ok := all[PointAbsent]; ok {
		s.absent = nil
		for _, c := range list {
			if a, ok := c.Value.(absence); ok {
				if s.absent == nil {
					s.absent = map[string]absence{}
				}
				s.absent[c.Key] = a
			}
		}
	}
	if list, ok := all[PointHolds]; ok {
		s.holds = nil
		for _, c := range list {
			if h, ok := c.Value.(hold); ok {
				s.holds = append(s.holds, h)
			}
		}
	}
	recollect(&s.pre, all, PointPreExecute)
	recollect(&s.guards, all, PointGuards)
	if _, ok := all[PointGuards]; ok {
		s.declared = declaredShadows(s.guards)
	}
	recollect(&s.exec, all, PointExecute)
	recollect(&s.post, all, PointPostExecute)
	recollect(&s.result, all, PointResult)
	// The newest approver wins (the newest contribution is the last in
	// order, since approvers are all contributed at order 0).
	if list, ok := all[PointApprovers]; ok {
		s.approver = nil
		if len(list) > 0 {
			if a, ok := list[len(list)-1].Value.(entry[ApproverFunc]); ok {
				s.approver = &a
			}
		}
	}
	if prev := t.snap.Swap(s); prev != nil {
		// A retired snapshot nobody runs on can never gain a caller again
		// (acquire checks that its snapshot is current), so it is dropped.
		t.retired = slices.DeleteFunc(append(t.retired, prev), func(r *snapshot) bool { return r.inflight.Load() == 0 })
	}
}

// recollect rebuilds one stage's chain when its point changed.
func recollect[F any](chain *[]entry[F], all map[string][]kernel.Contribution, point string) {
	if _, ok := all[point]; ok {
		*chain = collect[F](all, point)
	}
}

// MaxArgumentBytes is the largest argument bound of any tool registered
// now (at least Options.MaxArgumentBytes): a front end reads no more of a
// call's request than that and its envelope.
func (t *Tools) MaxArgumentBytes() int {
	if n := t.current().maxArgs; n > 0 {
		return n
	}
	return t.opts.MaxArgumentBytes
}

// current returns the snapshot, compiled first if the points changed.
func (t *Tools) current() *snapshot {
	s := t.snap.Load()
	if s.gen != t.k.Points().Generation() {
		t.compile()
		s = t.snap.Load()
	}
	return s
}

// acquire returns the current snapshot, counted as in use until release.
func (t *Tools) acquire() *snapshot {
	for {
		s := t.current()
		s.inflight.Add(1)
		// Compile may have replaced it between the two steps: then this
		// call must not run on it, since Quiesce may have found it unused.
		if t.snap.Load() == s {
			return s
		}
		s.inflight.Add(-1)
	}
}

// Quiesce waits until no call is running on a version of the pipeline older
// than the current one, or until ctx ends. Once a plugin's registrations
// are removed (an unload, a reload's swap), this is when nothing can call
// into them any more: its process may then stop without failing a call.
func (t *Tools) Quiesce(ctx context.Context) error {
	// The removals this waits for may not be compiled yet: then the calls
	// that could still reach them run on the current snapshot, which the
	// compile retires.
	t.compile()
	t.rebuild.Lock()
	olds := slices.Clone(t.retired)
	t.rebuild.Unlock()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		olds = slices.DeleteFunc(olds, func(r *snapshot) bool { return r.inflight.Load() == 0 })
		if len(olds) == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("calls still running after their tools were removed: %w", ctx.Err())
		case <-tick.C:
		}
	}
}
