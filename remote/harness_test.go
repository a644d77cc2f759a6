package remote_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/sandbox"
)

// processHarness is conformance.Harness with every plugin a spec describes
// in a process of its own: internal/testkit/testplugin, started by remote.Manager
// with the spec as its configuration. The host around them is the same as
// the in-host harness's: a kernel, the tools service and the "audit"
// observer, which stays in the host (it is the case's instrument, not a
// plugin under test). Policies a case loads itself (timeout, retry) and the
// kernel-level cases' plugins are in-host too.
type processHarness struct {
	// opts are the manager's options; Logger is set per host.
	opts remote.Options
	// sandboxed confines every plugin under test (testSandbox).
	sandboxed bool
	// python runs every plugin under test as internal/testkit/pytestplugin, the
	// test plugin's twin written with the Python SDK.
	python bool
	// pythonScript, when set, is the pytestplugin to run instead of the
	// repository's (a copy on the SDK installed as a package).
	pythonScript string
}

// testRestart is the restart policy of the plugins under test: a crash is
// followed by a new process almost at once.
var testRestart = remote.RestartPolicy{Attempts: 100, Window: time.Minute, Backoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}

// pluginConfig is internal/testkit/testplugin's configuration (its Config type,
// which lives in a main package). The plugin decodes it strictly, so the
// names must match.
type pluginConfig struct {
	Spec      conformance.PluginSpec `json:"spec"`
	LogDir    string                 `json:"log_dir"`
	Provides  []string               `json:"provides,omitempty"`
	Gate      string                 `json:"gate,omitempty"`
	ApplyLog  string                 `json:"apply_log,omitempty"`
	Control   string                 `json:"control,omitempty"`
	LateTools []conformance.ToolSpec `json:"late_tools,omitempty"`
	// CrashOnApply makes the plugin write it to stderr and exit 3 in Apply;
	// CrashAfterApply, 100ms after Apply has returned.
	CrashOnApply    string `json:"crash_on_apply,omitempty"`
	CrashAfterApply string `json:"crash_after_apply,omitempty"`
}

// defaultApprovalTimeout matches the in-host harness: generous, but a hung
// case still ends.
const defaultApprovalTimeout = 10 * time.Second

// testLogger discards the host's log unless PLUGKIT_TEST_LOG is set (then it
// goes to the test's output, plugins' stderr included).
func testLogger(t testing.TB) hclog.Logger {
	if os.Getenv("PLUGKIT_TEST_LOG") == "" {
		return hclog.NewNullLogger()
	}
	return hclog.New(&hclog.LoggerOptions{Name: "host", Level: hclog.Debug, Output: testWriter{t}})
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func (h processHarness) New(t *testing.T, cfg conformance.Config) conformance.Host {
	t.Helper()
	host := newHost(t, cfg, h.opts)
	if h.sandboxed {
		host.sandbox = testSandbox(host.dir)
	}
	if h.python {
		host.binary = pythonPlugin(t)
	}
	if h.pythonScript != "" {
		host.binary = h.pythonScript
	}
	return host
}

// newHost returns a host with the tools service and the in-host audit,
// whose plugins run under a manager with opts; t.Cleanup closes it.
func newHost(t testing.TB, cfg conformance.Config, opts remote.Options) *processHost {
	t.Helper()
	host := newBareHost(t, cfg, opts)
	if _, err := host.k.Load(conformance.AuditObserver(&host.audit)); err != nil {
		t.Fatalf("load the audit observer: %v", err)
	}
	return host
}

// newBareHost is newHost without the audit observer: no listener at all.
func newBareHost(t testing.TB, cfg conformance.Config, opts remote.Options) *processHost {
	t.Helper()
	return newBareHostWith(t, cfg, pipeline.Options{}, opts)
}

// newBareHostWith is newBareHost with the pipeline's options (its approval
// timeout is cfg's).
func newBareHostWith(t testing.TB, cfg conformance.Config, popts pipeline.Options, opts remote.Options) *processHost {
	t.Helper()
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = defaultApprovalTimeout
	}
	log := testLogger(t)
	k := kernel.New(log)
	popts.ApprovalTimeout = cfg.ApprovalTimeout
	tools := pipeline.New(k, popts)
	opts.Logger = log
	if cfg.ListenerTimeout > 0 {
		opts.ListenerTimeout = cfg.ListenerTimeout
	}
	m, err := remote.NewManager(k, tools, opts)
	if err != nil {
		t.Fatalf("new manager: %v", err)
	}
	host := &processHost{k: k, tools: tools, m: m, listenerTimeout: opts.ListenerTimeout, dir: t.TempDir(), observed: map[string]*observedLog{}, killed: map[string]int{}}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		m.Close(ctx)
		k.Close()
		tools.Close()
	})
	if _, err := k.Load(tools.Plugin()); err != nil {
		t.Fatalf("load the tools service: %v", err)
	}
	return host
}

// processHost is one host whose plugins are processes.
type processHost struct {
	k     *kernel.Kernel
	tools *pipeline.Tools
	m     *remote.Manager
	audit conformance.Audit
	dir   string // the plugins' log folder
	// listenerTimeout is the manager's bound on each remote listener.
	listenerTimeout time.Duration
	// sandbox confines the plugins the host loads; nil: unconfined.
	sandbox *sandbox.Policy
	// binary is the test plugin the host loads; empty: testPlugin.
	binary string

	mu       sync.Mutex
	observed map[string]*observedLog // by log name
	killed   map[string]int          // plugin → the pid Kill ended
}

var (
	_ conformance.Host    = (*processHost)(nil)
	_ conformance.Killer  = (*processHost)(nil)
	_ conformance.Bounded = (*processHost)(nil)
)

func (h *processHost) ListenerTimeout() time.Duration { return h.listenerTimeout }

// observedLog is the log of a remote stage-5 observer. Remote observers get
// results on a stream, after the caller has its result (SPEC: they never
// hold it up), so a case that reads their log right after its calls could
// read it before the last entries arrive. The in-host audit saw every call
// synchronously: Log waits until the observer's log holds one entry for
// each call the audit saw while the observer was loaded.
type observedLog struct {
	plugin string
	tools  []string // the observer's interest filter; empty is every tool
	from   int      // audit records before the plugin was loaded
	to     int      // audit records when it was unloaded; -1 while loaded
}

func (h *processHost) gate(name string) string { return filepath.Join(h.dir, name+".gate") }

func (h *processHost) Load(t *testing.T, p conformance.PluginSpec) error {
	t.Helper()
	return h.load(t, p, pluginConfig{}, nil)
}

// load starts a test plugin with spec p, the extra configuration in extra
// (its Spec, LogDir and Gate are set here) and env in its environment.
func (h *processHost) load(t testing.TB, p conformance.PluginSpec, extra pluginConfig, env []string) error {
	t.Helper()
	spec := h.spec(t, p, extra, env)
	from := len(h.audit.Records())
	h.mu.Lock()
	for _, o := range p.Observers {
		if o.Log != "" {
			h.observed[o.Log] = &observedLog{plugin: p.Name, tools: o.Tools, from: from, to: -1}
		}
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return h.m.Load(ctx, spec)
}

// spec is the manager's spec of a test plugin that runs p.
func (h *processHost) spec(t testing.TB, p conformance.PluginSpec, extra pluginConfig, env []string) remote.Spec {
	t.Helper()
	cfg := extra
	cfg.Spec, cfg.LogDir, cfg.Gate = p, h.dir, h.gate(p.Name)
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatalf("config of plugin %q: %v", p.Name, err)
	}
	path := testPlugin
	if h.binary != "" {
		path = h.binary
	}
	return remote.Spec{
		Name: p.Name, Path: path, Config: raw, Critical: p.Critical,
		Restart: testRestart, Env: env, Sandbox: h.sandbox,
	}
}

func (h *processHost) Unload(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, remote := status(h.m, name); !remote {
		// An in-host plugin a kernel-level case loaded itself.
		if err := h.k.Unload(name); err != nil {
			t.Fatalf("unload %s: %v", name, err)
		}
		return
	}
	if err := h.m.Unload(ctx, name); err != nil {
		t.Fatalf("unload %s: %v", name, err)
	}
	n := len(h.audit.Records())
	h.mu.Lock()
	for _, o := range h.observed {
		if o.plugin == name && o.to < 0 {
			o.to = n
		}
	}
	h.mu.Unlock()
}

func (h *processHost) Execute(ctx context.Context, tool, args string) pipeline.Result {
	return h.tools.Execute(ctx, tool, json.RawMessage(args), conformance.Caller)
}

func (h *processHost) Audit() []conformance.AuditRecord { return h.audit.Records() }
func (h *processHost) Kernel() *kernel.Kernel           { return h.k }
func (h *processHost) Tools() *pipeline.Tools           { return h.tools }

func (h *processHost) Log(name string) []string {
	h.mu.Lock()
	o := h.observed[name]
	var want int
	if o != nil {
		recs := h.audit.Records()
		end := len(recs)
		if o.to >= 0 {
			end = o.to
		}
		for _, r := range recs[min(o.from, end):end] {
			if len(o.tools) == 0 || slices.Contains(o.tools, r.Tool) {
				want++
			}
		}
	}
	h.mu.Unlock()
	var lines []string
	testkit.Eventually(5*time.Second, func() bool {
		lines = readLog(filepath.Join(h.dir, name+".log"))
		return len(lines) >= want
	})
	return lines
}

// readLog returns a log file's lines; nil when there is none.
func readLog(path string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		out = append(out, sc.Text())
	}
	return out
}

// status returns the manager's status of one plugin.
func status(m *remote.Manager, name string) (remote.Status, bool) {
	for _, s := range m.Status() {
		if s.Name == name {
			return s, true
		}
	}
	return remote.Status{}, false
}

// Kill closes the plugin's restart gate, then sends its process SIGKILL.
// The manager notices the death by itself, undoes the plugin's effects
// and starts a new process under the restart policy, as in production; the
// gate holds that process's apply step, so the plugin stays out (LOADING,
// nothing registered, a critical one held) until Restart opens the gate.
func (h *processHost) Kill(t *testing.T, name string) {
	t.Helper()
	st, ok := status(h.m, name)
	if !ok || st.PID == 0 {
		t.Fatalf("kill %s: no running process (status %+v)", name, st)
	}
	if err := os.WriteFile(h.gate(name), nil, 0o600); err != nil {
		t.Fatalf("kill %s: close the restart gate: %v", name, err)
	}
	if err := syscall.Kill(st.PID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (pid %d): %v", name, st.PID, err)
	}
	h.mu.Lock()
	h.killed[name] = st.PID
	h.mu.Unlock()
}

// Restart opens the plugin's gate and waits until it is ACTIVE in a new
// process and the pipeline no longer holds calls for it.
func (h *processHost) Restart(t *testing.T, name string) {
	t.Helper()
	h.mu.Lock()
	old := h.killed[name]
	h.mu.Unlock()
	if err := os.Remove(h.gate(name)); err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("restart %s: open the gate: %v", name, err)
	}
	if err := waitActive(h.m, h.k, name, old, 20*time.Second); err != nil {
		t.Fatalf("restart %s: %v", name, err)
	}
}

// waitActive waits until the plugin is ACTIVE in a process other than old
// and no hold of the pipeline names it.
func waitActive(m *remote.Manager, k *kernel.Kernel, name string, old int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		st, ok := status(m, name)
		if ok && st.State == kernel.Active && st.PID != 0 && st.PID != old && !held(k, name) {
			return nil
		}
		if time.Now().After(deadline) {
			return errors.New("not ACTIVE in a new process in time (status " + describeStatus(st) + ")")
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// held says whether the pipeline holds every call for the named plugin.
func held(k *kernel.Kernel, name string) bool {
	return slices.ContainsFunc(k.Points().All(pipeline.PointHolds), func(c kernel.Contribution) bool { return c.Key == name })
}

func describeStatus(s remote.Status) string {
	b, _ := json.Marshal(s)
	return string(b)
}
