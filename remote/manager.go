package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/confine"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Spec is one plugin process as a deployment declares it.
type Spec struct {
	Name string
	// Path is the plugin's binary.
	Path string
	Args []string
	// Dir is the process's working folder (default: the host's), so that
	// relative paths in its config mean what the deployment file means.
	Dir string
	// SHA256, when set, pins the binary: go-plugin checks it before launch.
	SHA256 string
	// Config is handed to the plugin's apply step (a JSON object).
	Config json.RawMessage
	// Inject lists the services the plugin needs; nil takes what the plugin
	// declares. A plugin that declares a service its Inject lacks is refused.
	Inject []string
	// Critical plugins fail closed: while one is not ACTIVE every call is
	// DENIED naming it.
	Critical bool
	// Restart bounds how often a crashed process is started again.
	Restart RestartPolicy
	// Env adds entries to the plugin's (otherwise empty) environment.
	Env []string
	// EnabledTools, when not nil, lists the only tools of the plugin that
	// are registered; DisabledTools are never registered. A tool left out
	// is logged and its registration succeeds as a no-op, so the plugin
	// runs unchanged.
	EnabledTools  []string
	DisabledTools []string
	// Sandbox, when set, confines the process (package confine): the
	// launcher applies it between fork and exec.
	Sandbox *confine.Policy
}

// toolEnabled applies the deployment's enabled and disabled tool lists.
func (s Spec) toolEnabled(name string) bool {
	if s.EnabledTools != nil && !slices.Contains(s.EnabledTools, name) {
		return false
	}
	return !slices.Contains(s.DisabledTools, name)
}

// RestartPolicy bounds restarts: at most Attempts within Window, waiting
// Backoff before the first and doubling up to MaxBackoff. A run longer than
// Window resets the count.
type RestartPolicy struct {
	Attempts   int
	Window     time.Duration
	Backoff    time.Duration
	MaxBackoff time.Duration
}

func (p RestartPolicy) withDefaults() RestartPolicy {
	if p.Attempts == 0 {
		p.Attempts = 5
	}
	if p.Window <= 0 {
		p.Window = time.Minute
	}
	if p.Backoff <= 0 {
		p.Backoff = 100 * time.Millisecond
	}
	if p.MaxBackoff <= 0 {
		p.MaxBackoff = 10 * time.Second
	}
	return p
}

// Options configure how plugin processes are run.
type Options struct {
	// DisableMTLS turns off go-plugin's AutoMTLS (on by default).
	DisableMTLS bool
	// MaxMessageBytes is the gRPC message limit on both sides.
	MaxMessageBytes int
	// ListenerTimeout bounds one filter RPC (guards, pre- and post-execute
	// filters); a listener that does not answer in time fails closed.
	ListenerTimeout time.Duration
	// StartTimeout bounds the handshake with a new process.
	StartTimeout time.Duration
	// DrainTimeout bounds a graceful stop.
	DrainTimeout time.Duration
	// SocketDir is where the private socket folder is made (default: the
	// system's temporary folder).
	SocketDir string
	// Launcher is the binary that confines a sandboxed plugin before
	// exec'ing it: any binary that imports package confine serves its
	// hidden subcommand. The default is the running executable.
	Launcher string
	Logger   hclog.Logger
}

// Manager runs plugin processes and ties each one to a kernel scope: what a
// process registers lives exactly as long as the process does.
type Manager struct {
	k         *kernel.Kernel
	tools     *pipeline.Tools
	opts      Options
	log       hclog.Logger
	socketDir string
	base      string // the folder socketDir is in
	unlisten  func()

	mu      sync.Mutex
	plugins map[string]*managed
	closed  bool
}

// NewManager prepares a private socket folder (owner-only, removed by
// Close; folders left by a host that was killed are removed here).
func NewManager(k *kernel.Kernel, tools *pipeline.Tools, opts Options) (*Manager, error) {
	if opts.MaxMessageBytes == 0 {
		opts.MaxMessageBytes = wire.DefaultMaxMessageBytes
	}
	if err := wire.ValidateMaxMessageBytes(opts.MaxMessageBytes); err != nil {
		return nil, err
	}
	if opts.ListenerTimeout == 0 {
		opts.ListenerTimeout = 30 * time.Second
	}
	if opts.StartTimeout == 0 {
		opts.StartTimeout = 30 * time.Second
	}
	if opts.DrainTimeout == 0 {
		opts.DrainTimeout = 5 * time.Second
	}
	if opts.Logger == nil {
		opts.Logger = k.Logger()
	}
	base := opts.SocketDir
	if base == "" {
		base = os.TempDir()
	}
	removeStaleSocketDirs(base)
	dir, err := os.MkdirTemp(base, socketDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("plugin socket folder: %w", err)
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, fmt.Errorf("plugin socket folder: %w", err)
	}
	m := &Manager{k: k, tools: tools, opts: opts, log: opts.Logger, socketDir: dir, base: base, plugins: map[string]*managed{}}
	m.unlisten = k.Events().Listen(kernel.EventStateChanged, "plugin manager", m.onState)
	return m, nil
}

const socketDirPrefix = "plugkit-"

// removeStaleSocketDirs removes socket folders whose host process is gone.
func removeStaleSocketDirs(base string) {
	entries, _ := os.ReadDir(base)
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || !strings.HasPrefix(name, socketDirPrefix) {
			continue
		}
		rest := strings.TrimPrefix(name, socketDirPrefix)
		pidStr, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if !ok || err != nil || pid == os.Getpid() || processAlive(pid) {
			continue
		}
		os.RemoveAll(filepath.Join(base, name))
	}
}

// managed is one plugin of the deployment across its process restarts.
type managed struct {
	m    *Manager
	spec Spec

	mu          sync.Mutex
	plan        *plan                       // the current definition
	procs       map[*kernel.Scope]*instance // the process of each live version
	deliberate  bool                        // an unload was asked: no restart, no hold
	hold        func()
	absent      []func()        // releases the "restarting" marks of its tools
	durable     *durableResults // a critical plugin's result listeners
	absentTools []string
	crashes     []time.Time
	restarts    int
	lastExit    string
	lastStderr  []string // the stderr tail of the process that last crashed

	stops sync.WaitGroup // processes being stopped (endProcess)
}

// plan is one definition of a plugin (Load's, or a reload's) and the process
// launched to ask it what it needs, which its first apply takes over.
type plan struct {
	mp   *managed
	spec Spec

	mu    sync.Mutex
	first *instance
}

// takeFirst returns the process launched with the plan, once.
func (p *plan) takeFirst() *instance {
	p.mu.Lock()
	defer p.mu.Unlock()
	in := p.first
	p.first = nil
	return in
}

// dropFirst stops the process launched with the plan if no apply took it.
func (p *plan) dropFirst() {
	if in := p.takeFirst(); in != nil {
		in.stop()
	}
}

// Load starts a plugin process, asks what it needs, and adds it to the
// kernel; its apply step runs once every service it injects is provided.
func (m *Manager) Load(ctx context.Context, spec Spec) error {
	if spec.Name == "" {
		return errors.New("load plugin: no name")
	}
	spec.Restart = spec.Restart.withDefaults()
	mp := &managed{m: m, spec: spec, procs: map[*kernel.Scope]*instance{}}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return errors.New("load plugin: manager is closed")
	}
	if _, dup := m.plugins[spec.Name]; dup {
		m.mu.Unlock()
		return fmt.Errorf("load plugin %s: already loaded", spec.Name)
	}
	m.plugins[spec.Name] = mp
	m.mu.Unlock()
	if spec.Critical {
		mp.holdCalls("starting")
	}
	forget := func() {
		mp.releaseHold()
		m.mu.Lock()
		delete(m.plugins, spec.Name)
		m.mu.Unlock()
	}

	p, def, err := mp.prepare(ctx, spec)
	if err != nil {
		forget()
		return fmt.Errorf("load plugin %s: %w", spec.Name, err)
	}
	mp.mu.Lock()
	mp.plan = p
	mp.mu.Unlock()

	_, err = m.k.Load(def)
	if err != nil && !errors.Is(err, errGaveUp) {
		// The scope stays FAILED and visible; a critical plugin stays held.
		return err
	}
	return err
}

// prepare launches a process for spec, asks what it needs and returns the
// kernel plugin whose first apply takes that process over.
func (mp *managed) prepare(ctx context.Context, spec Spec) (*plan, kernel.Plugin, error) {
	in, err := mp.m.launch(ctx, spec)
	if err != nil {
		return nil, kernel.Plugin{}, err
	}
	desc, err := in.describe(ctx)
	if err != nil {
		in.stop()
		return nil, kernel.Plugin{}, err
	}
	inject := spec.Inject
	if inject == nil {
		inject = desc.GetInject()
	} else if missing := missingFrom(desc.GetInject(), inject); len(missing) > 0 {
		in.stop()
		return nil, kernel.Plugin{}, fmt.Errorf("it needs %s, which its inject does not list", strings.Join(missing, ", "))
	}
	p := &plan{mp: mp, spec: spec, first: in}
	return p, kernel.Plugin{Name: spec.Name, Inject: inject, Apply: p.apply}, nil
}

func missingFrom(need, have []string) []string {
	var out []string
	for _, n := range need {
		if !slices.Contains(have, n) {
			out = append(out, n)
		}
	}
	return out
}

var errGaveUp = errors.New("restart budget exhausted")

// apply is the kernel apply step of a remote plugin: start (or take) the
// process, make it an effect of the scope, serve it the Host service and
// run its apply step.
func (p *plan) apply(ctx context.Context, s *kernel.Scope) error {
	mp := p.mp
	in := p.takeFirst()
	mp.mu.Lock()
	wait, gaveUp := mp.backoffLocked()
	mp.mu.Unlock()
	if gaveUp {
		return fmt.Errorf("%w: %d crashes within %s; last: %s", errGaveUp, len(mp.crashes), mp.spec.Restart.Window, mp.lastExit)
	}
	if in == nil {
		if wait > 0 {
			t := time.NewTimer(wait)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return ctx.Err()
			}
		}
		var err error
		if in, err = mp.m.launch(ctx, p.spec); err != nil {
			return err
		}
	}
	in.scope = s
	if p.spec.Critical {
		in.durable = mp.durableResults()
	}
	if _, err := s.Track("process "+strconv.Itoa(in.pid), func() error { mp.endProcess(in); return nil }); err != nil {
		in.stop()
		return err
	}
	mp.mu.Lock()
	mp.procs[s] = in
	mp.mu.Unlock()
	go mp.watch(in)

	hs := newHostService(in, s)
	id := in.client.ServeHost(hs)
	cfg := p.spec.Config
	if len(cfg) == 0 {
		cfg = json.RawMessage("{}")
	}
	resp, err := in.client.Apply(ctx, &pb.ApplyRequest{ConfigJson: cfg, HostBrokerId: id})
	if err != nil {
		return in.callErr("apply", err)
	}
	if resp.GetError() != "" {
		return errors.New(resp.GetError())
	}
	return nil
}

// backoffLocked says how long to wait before the next start and whether the
// restart budget is spent.
func (mp *managed) backoffLocked() (time.Duration, bool) {
	p := mp.spec.Restart
	cutoff := time.Now().Add(-p.Window)
	mp.crashes = slices.DeleteFunc(mp.crashes, func(t time.Time) bool { return t.Before(cutoff) })
	n := len(mp.crashes)
	if n == 0 {
		return 0, false
	}
	if p.Attempts >= 0 && n > p.Attempts {
		return 0, true
	}
	wait := p.Backoff << (n - 1)
	if wait > p.MaxBackoff || wait <= 0 {
		wait = p.MaxBackoff
	}
	return wait, false
}

// watch restarts the plugin when its process exits without being asked to.
func (mp *managed) watch(in *instance) {
	select {
	case <-in.stopping:
		return
	case <-in.client.Exited():
	}
	select {
	case <-in.stopping:
		return
	default:
	}
	if cur, _ := mp.m.k.Scope(mp.spec.Name); cur != in.scope {
		// A version a reload is starting (its reload fails) or has just
		// retired (nothing to do): the version that serves is untouched.
		in.stop()
		_ = in.scope.Restart(in.exitError(fmt.Errorf("its new process %d exited while starting", in.pid), "apply"))
		return
	}
	mp.mu.Lock()
	if mp.deliberate {
		mp.mu.Unlock()
		return
	}
	mp.crashes = append(mp.crashes, time.Now())
	mp.restarts++
	mp.lastExit = "process " + strconv.Itoa(in.pid) + " exited unexpectedly: " + in.exitReason()
	mp.lastStderr = in.stderr.Lines()
	cause := errors.New(mp.lastExit)
	mp.mu.Unlock()
	in.log.Error("plugin process exited; restarting", "pid", in.pid)
	mp.markAbsent("plugin " + mp.spec.Name + " is restarting: its " + mp.lastExit)
	in.stop()
	_ = in.scope.Restart(cause)
}

// markAbsent makes calls to the plugin's tools fail at once with why, while
// they are missing (until it is ACTIVE again or unloaded), instead of
// UNKNOWN_TOOL. It is set before the tools go, so there is no moment when a
// call finds neither.
func (mp *managed) markAbsent(why string) {
	var names []string
	for _, t := range mp.m.tools.List() {
		if t.Owner == mp.spec.Name {
			names = append(names, t.Name)
		}
	}
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.deliberate {
		return
	}
	if len(names) == 0 {
		// Gone already (it died again before registering): the same
		// tools, with the new reason.
		names = mp.absentTools
	}
	for _, release := range mp.absent {
		release()
	}
	mp.absent, mp.absentTools = nil, names
	for _, n := range names {
		mp.absent = append(mp.absent, mp.m.tools.MarkAbsent(n, why))
	}
}

func (mp *managed) releaseAbsent() {
	mp.mu.Lock()
	rel := mp.absent
	mp.absent, mp.absentTools = nil, nil
	mp.mu.Unlock()
	for _, release := range rel {
		release()
	}
}

// durableResults returns the plugin's durable result delivery, made once.
func (mp *managed) durableResults() *durableResults {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.durable == nil {
		mp.durable = newDurableResults(mp.spec.Name, mp.m.tools, mp.m.log.Named(mp.spec.Name))
	}
	return mp.durable
}

// endProcess is the undo of a version's process. A process that still runs
// is stopped on a goroutine of its own: its drain may take up to the drain
// timeout, and undos run with the kernel's lifecycle lock held, which must
// not keep other plugins from starting or restarting meanwhile. Unload and
// Reload wait for it (stops).
func (mp *managed) endProcess(in *instance) {
	if in.exited() {
		mp.stopProcess(in)
		return
	}
	mp.stops.Add(1)
	go func() {
		defer mp.stops.Done()
		mp.stopProcess(in)
	}()
}

// stopProcess stops a version's process. When the process still
// runs (an unload, or the old version after a reload), calls that may still
// reach it finish first, within the drain timeout.
func (mp *managed) stopProcess(in *instance) {
	if !in.exited() {
		ctx, cancel := context.WithTimeout(context.Background(), mp.m.opts.DrainTimeout)
		if err := mp.m.tools.Quiesce(ctx); err != nil {
			in.log.Warn("stopping the process with calls still in flight", "error", err)
		}
		if in.durable != nil {
			in.durable.release(ctx, in)
		}
		cancel()
	} else if in.durable != nil {
		in.durable.release(context.Background(), in)
	}
	in.stop()
	mp.mu.Lock()
	delete(mp.procs, in.scope)
	mp.mu.Unlock()
}

// holdCalls makes every call DENIED naming this critical plugin.
func (mp *managed) holdCalls(why string) {
	mp.mu.Lock()
	defer mp.mu.Unlock()
	if mp.hold != nil || mp.deliberate {
		return
	}
	mp.hold = mp.m.tools.Hold(mp.spec.Name, fmt.Sprintf("critical plugin %s is not active (%s)", mp.spec.Name, why))
}

func (mp *managed) releaseHold() {
	mp.mu.Lock()
	h := mp.hold
	mp.hold = nil
	mp.mu.Unlock()
	if h != nil {
		h()
	}
}

// onState follows the scopes of critical plugins: held unless ACTIVE.
func (m *Manager) onState(ctx context.Context, payload any, _ kernel.Next) (any, error) {
	sc, ok := payload.(kernel.StateChange)
	if !ok {
		return nil, nil
	}
	m.mu.Lock()
	mp := m.plugins[sc.Plugin]
	m.mu.Unlock()
	if mp == nil {
		return nil, nil
	}
	switch sc.To {
	case kernel.Active:
		mp.releaseAbsent()
	case kernel.Failed:
		if sc.Err != nil {
			mp.markAbsent("plugin " + sc.Plugin + " failed: " + sc.Err.Error() + " (host reload " + sc.Plugin + " starts it again)")
		}
	}
	mp.mu.Lock()
	critical := mp.spec.Critical
	mp.mu.Unlock()
	if !critical {
		return nil, nil
	}
	if sc.To == kernel.Active {
		mp.releaseHold()
	} else {
		mp.holdCalls(strings.ToLower(sc.To.String()))
	}
	return nil, nil
}

// Unload stops a plugin on purpose: its registrations are removed (a
// critical plugin's rules too) and its process is stopped gracefully.
func (m *Manager) Unload(ctx context.Context, name string) error {
	m.mu.Lock()
	mp := m.plugins[name]
	m.mu.Unlock()
	if mp == nil {
		return fmt.Errorf("unload plugin %s: not loaded", name)
	}
	mp.mu.Lock()
	mp.deliberate = true
	p := mp.plan
	mp.mu.Unlock()
	mp.releaseHold()
	mp.releaseAbsent()
	err := m.k.Unload(name)
	if p != nil {
		p.dropFirst()
	}
	// Its process has delivered what was queued for it and stopped.
	mp.stops.Wait()
	mp.mu.Lock()
	d := mp.durable
	mp.durable = nil
	mp.mu.Unlock()
	if d != nil {
		d.close()
	}
	m.mu.Lock()
	delete(m.plugins, name)
	m.mu.Unlock()
	return err
}

// Reload restarts a plugin's process without failing a call: a new process
// is started and applied while the old one serves, their registrations are
// swapped in one step, and the old process stops once the calls that may
// still reach it are done (within the drain timeout). If the new process
// does not start or apply, the old one keeps serving and the error says why.
// A reload resets the plugin's crash budget.
func (m *Manager) Reload(ctx context.Context, name string) error {
	mp := m.lookup(name)
	if mp == nil {
		return fmt.Errorf("reload plugin %s: not loaded", name)
	}
	mp.mu.Lock()
	spec := mp.spec
	mp.mu.Unlock()
	return m.replace(ctx, mp, spec)
}

// Replace reloads a plugin (as Reload does) with a new spec: a new binary,
// configuration or policy. The old spec stays if the new one fails.
func (m *Manager) Replace(ctx context.Context, spec Spec) error {
	mp := m.lookup(spec.Name)
	if mp == nil {
		return fmt.Errorf("reload plugin %s: not loaded", spec.Name)
	}
	spec.Restart = spec.Restart.withDefaults()
	return m.replace(ctx, mp, spec)
}

func (m *Manager) lookup(name string) *managed {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.plugins[name]
}

func (m *Manager) replace(ctx context.Context, mp *managed, spec Spec) error {
	serving := false
	if s, ok := m.k.Scope(spec.Name); ok && s.State() == kernel.Active {
		serving = true
	}
	fail := func(err error) error {
		if serving {
			return fmt.Errorf("reload plugin %s: %w (the running version keeps serving)", spec.Name, err)
		}
		return fmt.Errorf("reload plugin %s: %w", spec.Name, err)
	}
	p, def, err := mp.prepare(ctx, spec)
	if err != nil {
		return fail(err)
	}
	mp.mu.Lock()
	mp.crashes = nil
	mp.mu.Unlock()
	err = m.k.Replace(def)
	// The old process (or the new one, when it failed) has stopped.
	mp.stops.Wait()
	if err != nil {
		p.dropFirst()
		if serving {
			return fmt.Errorf("%w (the running version keeps serving)", err)
		}
		return err
	}
	mp.mu.Lock()
	prev := mp.plan
	mp.plan, mp.spec = p, spec
	var d *durableResults
	if !spec.Critical {
		// No longer critical: its new listeners are plain ones.
		d, mp.durable = mp.durable, nil
	}
	mp.mu.Unlock()
	if prev != nil {
		prev.dropFirst()
	}
	if d != nil {
		d.close()
	}
	return nil
}

// Close unloads every plugin, newest first, and removes the socket folder.
func (m *Manager) Close(ctx context.Context) {
	m.mu.Lock()
	m.closed = true
	names := make([]string, 0, len(m.plugins))
	for n := range m.plugins {
		names = append(names, n)
	}
	m.mu.Unlock()
	order := m.k.Describe()
	for i := len(order) - 1; i >= 0; i-- {
		if slices.Contains(names, order[i].Name) {
			_ = m.Unload(ctx, order[i].Name)
		}
	}
	m.unlisten()
	os.RemoveAll(m.socketDir)
}

// Status describes one managed plugin.
type Status struct {
	Name      string
	State     kernel.State
	PID       int
	Started   time.Time
	Restarts  int
	Critical  bool
	Tools     []string
	LastError string
	// LastExit says how the plugin's last process to crash ended ("process
	// 123 exited unexpectedly: exit status 3", "...: killed by signal:
	// killed"; for a plugin FAILED because a process died while starting
	// or applying, "process 124 exited while starting: exit status 1"), and
	// Stderr holds the last lines that process wrote to stderr. Both are
	// empty while no process of the plugin has crashed.
	LastExit string
	Stderr   []string
	// Sandbox says whether the process is confined: enforced, partial
	// (and what is not) or off.
	Sandbox confine.Enforcement
}

// Status describes every managed plugin in load order.
func (m *Manager) Status() []Status {
	var out []Status
	tools := m.tools.List()
	for _, info := range m.k.Describe() {
		m.mu.Lock()
		mp := m.plugins[info.Name]
		m.mu.Unlock()
		if mp == nil {
			continue
		}
		st := Status{Name: info.Name, State: info.State, LastError: info.LastError}
		cur, _ := m.k.Scope(info.Name)
		mp.mu.Lock()
		st.Critical = mp.spec.Critical
		spec := mp.spec
		if in := mp.procs[cur]; in != nil && !in.exited() {
			st.PID, st.Started = in.pid, in.started
		}
		st.Restarts = mp.restarts
		st.LastExit, st.Stderr = mp.lastExit, slices.Clone(mp.lastStderr)
		mp.mu.Unlock()
		st.Sandbox = m.sandbox(spec)
		if e, ok := failedExit(cur, info.State); ok {
			// FAILED because a process died while starting or applying.
			st.LastExit, st.Stderr = e.summary(), slices.Clone(e.stderr)
		}
		for _, t := range tools {
			if t.Owner == info.Name {
				st.Tools = append(st.Tools, t.Name)
			}
		}
		out = append(out, st)
	}
	return out
}

// Probe starts a plugin's binary only to ask what it is, then stops it.
// `host validate` uses it to learn each plugin's config schema, inject and
// provides without starting the deployment.
func (m *Manager) Probe(ctx context.Context, spec Spec) (*pb.DescribeResponse, error) {
	in, err := m.launch(ctx, spec)
	if err != nil {
		return nil, err
	}
	defer in.stop()
	return in.describe(ctx)
}
