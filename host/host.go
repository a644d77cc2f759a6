package host

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/plugkit-go/plugkit/consent"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/metrics"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/pipeline/policy"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/sandbox"
	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/tokenexchange"
	"github.com/plugkit-go/plugkit/tracing"
)

// Version is the host's version.
const Version = "0.1.0"

// Host is a running deployment.
type Host struct {
	Deployment *deployment.Deployment
	Approvals  *Approvals
	// Metrics is what the host serves to Prometheus (host block metrics).
	Metrics *metrics.Metrics
	// tracing sends traces to the host block's collector; nil without one.
	tracing *tracing.Tracing

	log     hclog.Logger
	k       *kernel.Kernel
	tools   *pipeline.Tools
	mgr     *remote.Manager
	started time.Time

	stopOnce  sync.Once
	watchMu   sync.Mutex // guards stopWatch and stopped
	stopWatch context.CancelFunc
	stopped   bool
	watchers  sync.WaitGroup
	reloading sync.Mutex // one file reload at a time
	gate      gate       // admits calls until Drain
	// consent keeps the user_consent upstreams' tokens; nil without a
	// user_consent block.
	consent *consent.Manager
	// limitStore is the shared rate store's connections; nil without one.
	limitStore io.Closer
	// builtins are the names of the host's own parts the kernel runs
	// beside the plugins (the tool registry, approvals, policies).
	builtins map[string]bool
	mu       sync.Mutex // guards Deployment once running
}

// deployment is the deployment as last loaded.
func (h *Host) deployment() *deployment.Deployment {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.Deployment
}

// Load parses and checks a deployment file, asking each plugin binary for
// its declaration. The diagnostics say everything wrong with the file.
func Load(ctx context.Context, path string, log hclog.Logger) (*deployment.Deployment, hcl.Diagnostics) {
	d, diags := deployment.Parse(path)
	if diags.HasErrors() {
		// Every problem at once: the plugins whose binary and config
		// could be read still have their config checked.
		if len(d.Plugins) > 0 {
			more, ok := sandboxChecks(d)
			diags = append(diags, more...)
			if !ok {
				return nil, diags
			}
			_ = probe(ctx, d, log, func(describe describeFunc) {
				diags = deployment.CheckConfigs(ctx, d, diags, describe)
			})
		}
		return nil, diags
	}
	// Before any plugin is started to be asked what it is: a sandbox that
	// is required but cannot be enforced must not run it at all.
	more, ok := sandboxChecks(d)
	diags = append(diags, more...)
	if !ok {
		return nil, diags
	}
	if err := probe(ctx, d, log, func(describe describeFunc) {
		diags = append(diags, deployment.Check(ctx, d, describe)...)
	}); err != nil {
		return nil, append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot start plugins", Detail: err.Error(), Extra: notTheFile{}})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return d, diags
}

// notTheFile marks an error of this machine's state (a socket folder that
// cannot be made), not of the deployment file.
type notTheFile struct{}

// FileIsValid is whether every error in diags is of the machine's state,
// the deployment file itself being fine: the CLI must not blame the file.
func FileIsValid(diags hcl.Diagnostics) bool {
	for _, d := range diags {
		if _, ok := d.Extra.(notTheFile); d.Severity == hcl.DiagError && !ok {
			return false
		}
	}
	return true
}

// sandboxChecks checks that this machine can enforce the sandboxes d
// requires; ok is false when it cannot, and then no plugin may be started,
// not even to be asked what it is.
func sandboxChecks(d *deployment.Deployment) (diags hcl.Diagnostics, ok bool) {
	if !sandboxed(d) {
		return nil, true
	}
	sup, err := SandboxSupport()
	if err != nil {
		return hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot sandbox plugins", Detail: err.Error()}}, false
	}
	diags = deployment.CheckSandboxes(d, sup, os.Geteuid())
	return diags, !diags.HasErrors()
}

type describeFunc = func(ctx context.Context, p deployment.Plugin) (deployment.Declaration, error)

// probe runs check with a describe function that starts a plugin's binary
// only to ask for its declaration, under d's host settings.
func probe(ctx context.Context, d *deployment.Deployment, log hclog.Logger, check func(describeFunc)) error {
	k := kernel.New(log)
	tools := pipeline.New(k, pipeline.Options{})
	defer tools.Close()
	opts := managerOptions(d.Host)
	opts.Logger = log
	mgr, err := remote.NewManager(k, tools, opts)
	if err != nil {
		return err
	}
	defer mgr.Close(ctx)
	var mu sync.Mutex
	probes := map[string]func() (*pb.DescribeResponse, error){}
	check(func(ctx context.Context, p deployment.Plugin) (deployment.Declaration, error) {
		spec := pluginSpec(p)
		ask := func() (*pb.DescribeResponse, error) { return mgr.Probe(ctx, spec) }
		// Plugins that run one binary the same way (a hundred bridged
		// servers behind one bridge binary) declare the same: ask once.
		if key, ok := declarationKey(spec); ok {
			mu.Lock()
			if probes[key] == nil {
				probes[key] = sync.OnceValues(ask)
			}
			ask = probes[key]
			mu.Unlock()
		}
		desc, err := ask()
		if err != nil {
			return deployment.Declaration{}, err
		}
		return deployment.Declaration{ConfigSchema: desc.GetConfigSchemaJson(), Inject: desc.GetInject(), Provides: desc.GetProvides(), Receipts: desc.GetReceipts(), Visibility: desc.GetVisibility()}, nil
	})
	return nil
}

// declarationKey is what a plugin's declaration can depend on: how its
// binary is run, not its name or its config (which Describe is not given
// when the host only asks). ok is false when it cannot be told.
func declarationKey(spec remote.Spec) (key string, ok bool) {
	how := struct {
		Path, Dir, SHA256 string
		Args, Env         []string
		Sandbox           *sandbox.Policy
	}{spec.Path, spec.Dir, spec.SHA256, spec.Args, spec.Env, spec.Sandbox}
	b, err := json.Marshal(how)
	if err != nil {
		return "", false
	}
	return string(b), true
}

// sandboxed reports whether any plugin of d runs in a sandbox.
func sandboxed(d *deployment.Deployment) bool {
	for _, p := range d.Plugins {
		if p.Sandbox.Policy() != nil {
			return true
		}
	}
	return false
}

// SandboxSupport is what this machine's kernel offers for sandboxing
// plugins, as the host's launcher (its own binary) finds it.
func SandboxSupport() (sandbox.Support, error) {
	launcher, err := sandbox.Executable()
	if err != nil {
		return sandbox.Support{}, err
	}
	return sandbox.Detect(launcher), nil
}

// New prepares a checked deployment: the tools service, the policies and
// the host's approver. Plugins start with Start.
func New(d *deployment.Deployment, log hclog.Logger) (*Host, error) {
	k := kernel.New(log)
	h := &Host{Deployment: d, Approvals: NewApprovals(), log: log, k: k, started: time.Now()}
	// Read at each scrape, by when the manager and the tools exist.
	h.Metrics = metrics.New(Version, func() []remote.Status {
		if h.mgr == nil {
			return nil
		}
		return h.Status()
	}, func() int64 { return h.tools.InFlight() })
	if err := h.routeApprovals(); err != nil {
		k.Close()
		return nil, err
	}
	popts := pipeline.Options{ApprovalTimeout: d.Host.ApprovalTimeout, ApprovalTimeoutFor: h.Approvals.routeTimeout, MaxArgumentBytes: d.Host.MaxArgumentBytes, MaxDescriptionBytes: d.Host.MaxDescriptionBytes, Logger: log.Named("tools"), OnApproval: h.Metrics.Approval, OnCall: h.Metrics.Call}
	opts := managerOptions(d.Host)
	opts.Logger = log
	opts.OnRPC = h.Metrics.RPC
	opts.OnResourceUpdated = h.resourceUpdated
	opts.Tokens = tokenexchange.New(nil)
	opts.Tokens.OnOutcome = h.Metrics.UpstreamToken
	cm, err := newConsent(d.Host.UserConsent)
	if err != nil {
		k.Close()
		h.Approvals.closeApprovals()
		return nil, err
	}
	if cm != nil {
		logConsents(cm, log.Named("consent"))
		h.consent = cm
		opts.Tokens.Consent = cm
	}
	opts.OnEgress = h.egressEvent
	opts.Elicit = h.elicit
	opts.EgressResolver = egressResolver(d.Host.EgressResolver)
	if tc := d.Host.Tracing; tc != nil {
		t, err := tracing.New(context.Background(), tracing.Config{Endpoint: tc.Endpoint, Sample: tc.Sample, Headers: tc.Headers}, Version)
		if err != nil {
			k.Close()
			h.Approvals.closeApprovals()
			if cm != nil {
				_ = cm.Vault().Close()
			}
			return nil, err
		}
		h.tracing = t
		popts.Tracer = t.Tracer()
		opts.TracerProvider, opts.ExportSpans = t.Provider(), t.Export
	}
	tools := pipeline.New(k, popts)
	h.tools = tools
	if err := tools.SetShadow(shadowRules(d)); err != nil {
		k.Close()
		h.Approvals.closeApprovals()
		return nil, err
	}
	// Per-tool series go with their tool (a bridged server may declare and
	// withdraw thousands).
	k.Points().Watch(pipeline.PointTools, func() {
		h.Metrics.Prune(func(name string) bool { _, ok := tools.Lookup(name); return ok })
	})
	builtins := []kernel.Plugin{tools.Plugin(), h.Approvals.Plugin()}
	pol := d.Host.Policy
	if pp := pol.PerPrincipal; pp != nil {
		// Outermost: a call over its principal's limits takes no other slot.
		limits, closer, err := principalLimits(pp, h.Metrics)
		if err != nil {
			h.closeBuiltins(context.Background())
			return nil, err
		}
		h.limitStore = closer
		builtins = append(builtins, limits)
	}
	if pol.Concurrency > 0 || pol.PerTool > 0 {
		builtins = append(builtins, policy.Concurrency(policy.ConcurrencyConfig{Global: pol.Concurrency, PerTool: pol.PerTool}))
	}
	if pol.Timeout {
		// Outside retry: one clock covers every attempt.
		builtins = append(builtins, policy.Timeout())
	}
	if pol.Retry != nil {
		builtins = append(builtins, policy.Retry(policy.RetryConfig{Attempts: pol.Retry.Attempts, Backoff: pol.Retry.Backoff, MaxBackoff: pol.Retry.MaxBackoff}))
	}
	h.builtins = map[string]bool{}
	for _, p := range builtins {
		h.builtins[p.Name] = true
		if _, err := k.Load(p); err != nil {
			h.closeBuiltins(context.Background())
			return nil, fmt.Errorf("start built-in %s: %w", p.Name, err)
		}
	}
	mgr, err := remote.NewManager(k, tools, opts)
	if err != nil {
		h.closeBuiltins(context.Background())
		return nil, err
	}
	h.mgr = mgr
	return h, nil
}

// Kernel is the host's kernel, for following its events.
func (h *Host) Kernel() *kernel.Kernel { return h.k }

// Start starts the plugins: their processes start together, and they apply
// in start order (see remote.Manager.LoadAll). A plugin that fails to start is
// logged and left FAILED (a critical one keeps every call denied); the
// others run.
func (h *Host) Start(ctx context.Context) {
	plugins := h.Deployment.Plugins
	specs := make([]remote.Spec, len(plugins))
	for i, p := range plugins {
		specs[i] = pluginSpec(p)
	}
	for i, err := range h.mgr.LoadAll(ctx, specs) {
		if err != nil {
			h.log.Error("plugin did not start", "plugin", plugins[i].Name, "error", err)
		}
	}
	h.startWatch(ctx)
}

// startWatch watches the binaries of the plugins with watch = true, as the
// deployment now says.
func (h *Host) startWatch(ctx context.Context) {
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	h.watchMu.Lock()
	if h.stopped {
		h.watchMu.Unlock()
		cancel()
		return
	}
	h.stopWatch = cancel
	h.watchMu.Unlock()
	if err := h.watchBinaries(wctx); err != nil {
		h.log.Error("cannot watch plugin binaries; watch = true has no effect", "error", err)
	}
}

// endWatch stops watching binaries and waits for the watcher to end.
func (h *Host) endWatch() {
	h.watchMu.Lock()
	stop := h.stopWatch
	h.stopWatch = nil
	h.watchMu.Unlock()
	if stop != nil {
		stop()
		h.watchers.Wait()
	}
}

// Stop stops every plugin, newest first, then the built-ins.
func (h *Host) Stop(ctx context.Context) {
	h.stopOnce.Do(func() {
		h.watchMu.Lock()
		h.stopped = true // a file reload racing this starts no watcher
		h.watchMu.Unlock()
		h.endWatch()
		h.mgr.Close(ctx)
		h.closeBuiltins(ctx)
	})
}

// closeBuiltins ends what New made before the plugins: the kernel, the
// tools service and the tracing (once the plugins, which hand their last
// spans to the host as they stop, are gone).
func (h *Host) closeBuiltins(ctx context.Context) {
	if n := h.Approvals.notifier; n != nil {
		n.Close()
	}
	h.Approvals.closeApprovals()
	h.k.Close()
	h.tools.Close()
	if h.limitStore != nil {
		_ = h.limitStore.Close()
	}
	if h.consent != nil {
		_ = h.consent.Vault().Close()
	}
	if h.tracing != nil {
		if err := h.tracing.Shutdown(ctx); err != nil {
			h.log.Warn("traces not sent", "error", err)
		}
	}
}

// receiptWait bounds how long a call waits for its audit receipt after its
// result (receipts = true): past it, the result goes without one.
const receiptWait = 2 * time.Second

// Call runs one call through the pipeline; once Drain has begun it refuses
// the call before it starts. When the deployment asks for receipts, the
// result carries where the audit recorded it, once the audit plugin
// acknowledged the write (see remote.Receipts).
func (h *Host) Call(ctx context.Context, tool string, args json.RawMessage, caller string) pipeline.Result {
	if !h.gate.enter() {
		return refusedDraining()
	}
	defer h.gate.leave()
	r := h.tools.Execute(ctx, tool, args, caller)
	if rc := h.mgr.Receipts(); rc != nil {
		wctx, cancel := context.WithTimeout(ctx, receiptWait)
		if rec, ok := rc.Wait(wctx, r.ID); ok {
			r.Receipt = &rec
		} else {
			h.log.Warn("call result without an audit receipt: no critical audit plugin acknowledged its line in time", "id", r.ID, "tool", tool)
		}
		cancel()
	}
	return r
}

// Explain runs stages 0-2 of a call as a dry run (pipeline.Tools.Explain):
// nothing executes, nothing is approved or audited as a call.
func (h *Host) Explain(ctx context.Context, tool string, args json.RawMessage, caller string) pipeline.Explanation {
	x := h.tools.Explain(ctx, tool, args, caller)
	h.Approvals.explainRoute(&x)
	return x
}

// Tools lists the registered tools.
func (h *Host) Tools() []pipeline.ToolInfo { return h.tools.List() }

// Pipeline is the tools service.
func (h *Host) Pipeline() *pipeline.Tools { return h.tools }

// Status describes every plugin of the deployment.
func (h *Host) Status() []remote.Status { return h.mgr.Status() }

// Builtin reports whether name is one of the host's own parts rather than
// a plugin of the deployment: their states are no news to an operator.
func (h *Host) Builtin(name string) bool { return h.builtins[name] }

// Started is when the host started.
func (h *Host) Started() time.Time { return h.started }

// Reload restarts one plugin's process without failing a call: the new
// process starts and registers while the old one serves, then takes over in
// one step (see remote.Manager.Reload). If the new one fails, the old one
// keeps serving and the error says why.
func (h *Host) Reload(ctx context.Context, name string) error {
	if findPlugin(h.deployment(), name) == nil {
		return fmt.Errorf("reload: no plugin named %q in the deployment", name)
	}
	err := h.mgr.Reload(ctx, name)
	h.Metrics.Reloaded(err == nil)
	return err
}
