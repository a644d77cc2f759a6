package conformance

import (
	"context"
	"encoding/json"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// InHost is the harness whose plugins are Go functions in the host: each
// spec becomes a pipeline listener of a kernel.Plugin.
func InHost() Harness { return inHost{} }

type inHost struct{}

// defaultApprovalTimeout is long enough for any approver a case expects to
// answer, short enough that a hung test still ends.
const defaultApprovalTimeout = 10 * time.Second

func (inHost) New(t *testing.T, cfg Config) Host {
	t.Helper()
	if cfg.ApprovalTimeout <= 0 {
		cfg.ApprovalTimeout = defaultApprovalTimeout
	}
	k := kernel.New(hclog.NewNullLogger())
	tools := pipeline.New(k, pipeline.Options{ApprovalTimeout: cfg.ApprovalTimeout})
	h := &inHostHost{k: k, tools: tools, logs: newLogs()}
	t.Cleanup(func() {
		k.Close()
		tools.Close()
	})
	if _, err := k.Load(tools.Plugin()); err != nil {
		t.Fatalf("load the tools service: %v", err)
	}
	if _, err := k.Load(AuditObserver(&h.audit)); err != nil {
		t.Fatalf("load the audit observer: %v", err)
	}
	return h
}

// Audit is a concurrency-safe list of audit records.
type Audit struct {
	mu   sync.Mutex
	recs []AuditRecord
}

// Records returns a copy of the records, oldest first.
func (a *Audit) Records() []AuditRecord {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.recs)
}

func (a *Audit) add(r AuditRecord) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.recs = append(a.recs, r)
}

// AuditObserver is the host's "audit" plugin: a stage-5 observer recording
// every call into a. Other harnesses load it too, in the host.
func AuditObserver(a *Audit) kernel.Plugin {
	return kernel.Plugin{
		Name:   AuditPlugin,
		Inject: []string{pipeline.ServiceName},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			_, err = reg.OnResult(func(ctx context.Context, e *pipeline.Execution, r pipeline.Result) error {
				a.add(AuditRecord{ID: r.ID, Tool: e.Name(), OK: r.OK, Code: r.Code(), DecidedBy: r.DecidedBy})
				return nil
			})
			return err
		},
	}
}

type inHostHost struct {
	k     *kernel.Kernel
	tools *pipeline.Tools
	audit Audit
	logs  *Logs
}

func (h *inHostHost) Load(t *testing.T, p PluginSpec) error {
	t.Helper()
	plugin, err := InHostPlugin(p, h.logs)
	if err != nil {
		t.Fatalf("spec of plugin %q: %v", p.Name, err)
	}
	_, err = h.k.Load(plugin)
	return err
}

func (h *inHostHost) Unload(t *testing.T, name string) {
	t.Helper()
	if err := h.k.Unload(name); err != nil {
		t.Fatalf("unload %s: %v", name, err)
	}
}

func (h *inHostHost) Execute(ctx context.Context, tool, args string) pipeline.Result {
	return h.tools.Execute(ctx, tool, json.RawMessage(args), Caller)
}

func (h *inHostHost) Audit() []AuditRecord     { return h.audit.Records() }
func (h *inHostHost) Log(name string) []string { return h.logs.Get(name) }
func (h *inHostHost) Kernel() *kernel.Kernel   { return h.k }
func (h *inHostHost) Tools() *pipeline.Tools   { return h.tools }

// Logs holds the named logs behaviours write to.
type Logs struct {
	mu sync.Mutex
	m  map[string][]string
}

func newLogs() *Logs { return &Logs{m: map[string][]string{}} }

// Add appends entry to the named log; an empty name is no log.
func (l *Logs) Add(name, entry string) {
	if name == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.m[name] = append(l.m[name], entry)
}

// Get returns a copy of the named log.
func (l *Logs) Get(name string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.m[name])
}
