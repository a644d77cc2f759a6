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
	Logger    hclog.Logger
}

// Manager runs plugin processes and ties each one to a kernel scope: what a
// process registers lives exactly as long as the process does.
type Manager struct {
	k         *kernel.Kernel
	tools     *pipeline.Tools
	opts      Options
	log       hclog.Logger
	socketDir string
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
	m := &Manager{k: k, tools: tools, opts: opts, log: opts.Logger, socketDir: dir, plugins: map[string]*managed{}}
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

	mu         sync.Mutex
	first      *instance // launched by Load for Describe, used by the first apply
	cur        *instance
	deliberate bool // an unload was asked: no restart, no hold
	hold       func()
	crashes    []time.Time
	restarts   int
	lastExit   string
}

// Load starts a plugin process, asks what it needs, and adds it to the
// kernel; its apply step runs once every service it injects is provided.
func (m *Manager) Load(ctx context.Context, spec Spec) error {
	if spec.Name == "" {
		return errors.New("load plugin: no name")
	}
	spec.Restart = spec.Restart.withDefaults()
	mp := &managed{m: m, spec: spec}
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

	in, err := m.launch(ctx, spec)
	if err != nil {
		forget()
		return err
	}
	desc, err := in.describe(ctx)
	if err != nil {
		in.stop()
		forget()
		return err
	}
	inject := spec.Inject
	if inject == nil {
		inject = desc.GetInject()
	} else if missing := missingFrom(desc.GetInject(), inject); len(missing) > 0 {
		in.stop()
		forget()
		return fmt.Errorf("load plugin %s: it needs %s, which its inject does not list", spec.Name, strings.Join(missing, ", "))
	}
	mp.mu.Lock()
	mp.first = in
	mp.mu.Unlock()

	_, err = m.k.Load(kernel.Plugin{Name: spec.Name, Inject: inject, Apply: mp.apply})
	if err != nil && !errors.Is(err, errGaveUp) {
		// The scope stays FAILED and visible; a critical plugin stays held.
		return err
	}
	return err
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
func (mp *managed) apply(ctx context.Context, s *kernel.Scope) error {
	mp.mu.Lock()
	in := mp.first
	mp.first = nil
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
		if in, err = mp.m.launch(ctx, mp.spec); err != nil {
			return err
		}
	}
	if _, err := s.Track("process "+strconv.Itoa(in.pid), func() error { in.stop(); return nil }); err != nil {
		in.stop()
		return err
	}
	mp.mu.Lock()
	mp.cur = in
	mp.mu.Unlock()
	go mp.watch(in)

	hs := newHostService(in, s)
	id := in.client.ServeHost(hs)
	cfg := mp.spec.Config
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
	mp.mu.Lock()
	if mp.deliberate || mp.cur != in {
		mp.mu.Unlock()
		return
	}
	mp.crashes = append(mp.crashes, time.Now())
	mp.restarts++
	mp.lastExit = "process " + strconv.Itoa(in.pid) + " exited unexpectedly"
	cause := errors.New(mp.lastExit)
	mp.mu.Unlock()
	in.log.Error("plugin process exited; restarting", "pid", in.pid)
	in.stop()
	_ = mp.m.k.Restart(mp.spec.Name, cause)
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
	if mp == nil || !mp.spec.Critical {
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
	first := mp.first
	mp.first = nil
	mp.mu.Unlock()
	mp.releaseHold()
	err := m.k.Unload(name)
	if first != nil {
		first.stop()
	}
	m.mu.Lock()
	delete(m.plugins, name)
	m.mu.Unlock()
	return err
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
		st := Status{Name: info.Name, State: info.State, Critical: mp.spec.Critical, LastError: info.LastError}
		mp.mu.Lock()
		if mp.cur != nil && !mp.cur.exited() {
			st.PID, st.Started = mp.cur.pid, mp.cur.started
		}
		st.Restarts = mp.restarts
		mp.mu.Unlock()
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
