package remote

import (
	"context"
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
	"github.com/plugkit-go/plugkit/sandbox"
	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

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
	receipts  *Receipts // nil unless opts.Receipts

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
	base, setting := opts.SocketDir, "run_dir"
	if base == "" {
		base, setting = os.TempDir(), "TMPDIR"
		if os.Getenv("TMPDIR") == "" {
			setting = "the default, /tmp"
		}
	}
	if len(base) > MaxSocketBase {
		// A socket path longer than the kernel's limit cannot be bound.
		opts.Logger.Debug("socket folder base too long for Unix socket paths; using /tmp", "base", base)
		base, setting = "/tmp", "the fallback for a folder too long for socket paths, /tmp"
	}
	closeInherited(opts.Logger)
	removeStaleSocketDirs(base)
	// A folder of the host's own (0700), also inside a folder every user
	// of the machine or pod may write to (/tmp, a Kubernetes emptyDir):
	// none but this user can reach or replace the sockets in it.
	dir, err := os.MkdirTemp(base, socketDirPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, &RunDirError{Dir: base, Setting: setting, Err: err}
	}
	if err := os.Chmod(dir, 0o700); err != nil {
		os.RemoveAll(dir)
		return nil, &RunDirError{Dir: base, Setting: setting, Err: err}
	}
	m := &Manager{k: k, tools: tools, opts: opts, log: opts.Logger, socketDir: dir, base: base, plugins: map[string]*managed{}}
	if opts.Receipts {
		m.receipts = newReceipts(opts.ReceiptsFrom)
	}
	m.unlisten = k.Events().OnStateChange("plugin manager", m.onState)
	return m, nil
}

const socketDirPrefix = "plugkit-"

var closeInheritedOnce sync.Once

// closeInherited marks the descriptors the host process inherited (any
// but stdin, stdout and stderr) close-on-exec, once: a plugin, sandboxed
// or not, then starts with its standard streams and its lanes only. The
// launcher of a sandboxed plugin does the same again, whoever started it.
// Every descriptor Go opens is close-on-exec already, so only inherited
// ones change.
func closeInherited(log hclog.Logger) {
	closeInheritedOnce.Do(func() {
		if err := sandbox.CloseOnExecFrom(3); err != nil {
			log.Warn("descriptors the host inherited may reach unsandboxed plugins", "error", err)
		}
	})
}

// MaxSocketBase is the longest folder the private socket folder can be
// made in: a Unix socket's path is at most 107 bytes, and below the base
// go in "/plugkit-PID-N/plugin-dirN/pluginN" (at most 65 bytes: go-plugin
// names the last two).
const MaxSocketBase = 107 - 65

// RunDirError is a plugin socket folder that cannot be made: the machine's
// state (a read-only /tmp in a container), not the deployment file's.
type RunDirError struct {
	Dir     string // the folder it is made in
	Setting string // what chose Dir: run_dir, TMPDIR or the default
	Err     error
}

func (e *RunDirError) Error() string {
	return fmt.Sprintf("plugin socket folder: cannot make a folder in %s (%s): %v; "+
		"set run_dir in the host block, or TMPDIR, to a folder this user can write "+
		"(in a container, a writable volume such as an emptyDir)", e.Dir, e.Setting, e.Err)
}

func (e *RunDirError) Unwrap() error { return e.Err }

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
	Name     string
	State    kernel.State
	PID      int
	Started  time.Time
	Restarts int
	Critical bool
	Tools    []string
	// Held are the plugin's tools held absent, "name: why" each (see
	// pipeline.ToolInfo.Held); they are not in Tools.
	Held      []string
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
	Sandbox sandbox.Enforcement
	// Problem is what the running process reports keeps it from doing its
	// job (an audit log that cannot be written); "" when nothing does.
	Problem string
	// For a critical plugin's result listeners: the results waiting for a
	// process to acknowledge them, and how many were sent again (a delivery
	// not acknowledged) or dropped (the queue full) so far.
	Queued, Resent, Dropped int
	// StartTook is how long the running process took from spawn to a
	// connected client (its apply step not included).
	StartTook time.Duration
	// Calls says how the host calls the running process's handlers:
	// "lanes" (call lanes, the plugin's calls back on them too),
	// "stream" (Plugin.Calls) or "rpc" (an RPC per call).
	Calls string
	// Registered counts the tools the plugin's processes registered since
	// it was loaded, each registration once: a bridged server's change of
	// one tool adds one, a restart adds all of them again.
	Registered int64
	// Protocol is the plugkit protocol version the running process speaks
	// (wire.ProtocolVersions): one of version 1 is called with RPCs only.
	Protocol int
	// OOMKills counts the plugin's processes the kernel killed at its
	// sandbox's memory limit (its cgroup's) since it was loaded.
	OOMKills int
	// CgroupMemory is the memory charged to the running process's cgroup
	// (what it started, shared memory and page cache included); 0 without
	// a cgroup.
	CgroupMemory int64
	// Egress counts the connections the plugin asked its egress proxy
	// for (a sandbox with an egress list), and names the last refused.
	Egress EgressStatus
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
			st.Problem = in.currentProblem()
			st.StartTook = in.startTook
			st.Calls = in.calls.transport()
			st.Protocol = in.gp.NegotiatedVersion()
			st.CgroupMemory = in.cgroup.MemoryBytes()
		}
		st.Restarts, st.OOMKills = mp.restarts, mp.oomKills
		st.Registered = mp.registered.Load()
		st.Egress = mp.egress.status()
		st.LastExit, st.Stderr = mp.lastExit, slices.Clone(mp.lastStderr)
		durable := mp.durable
		mp.mu.Unlock()
		if durable != nil {
			st.Queued, st.Resent, st.Dropped = durable.counts()
			if p := durable.problem(); p != "" && st.Problem == "" {
				st.Problem = p
			}
		}
		st.Sandbox = m.sandbox(spec)
		if e, ok := failedExit(cur, info.State); ok {
			// FAILED because a process died while starting or applying.
			st.LastExit, st.Stderr = e.summary(), slices.Clone(e.stderr)
		}
		for _, t := range tools {
			switch {
			case t.Owner != info.Name:
			case t.Held != "":
				st.Held = append(st.Held, t.Name+": "+t.Held)
			default:
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
	return in.describe(ctx, nil)
}
