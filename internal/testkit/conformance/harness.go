// Package conformance is the transport-neutral conformance suite: every case
// of CONFORMANCE.md as a named subtest, written against a small Harness whose
// plugins are declarative specs, so the same cases run with plugins in the
// host (InHost) and in plugin processes (a harness over gRPC).
//
// A harness for another transport implements Harness and Host, builds the
// behaviours of spec.go on its side of the wire, and implements Killer when
// its plugins have processes to kill; cases that need a process are skipped,
// saying so, when it does not.
package conformance

import (
	"context"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// Harness makes hosts.
type Harness interface {
	// New returns a fresh host: a kernel with the tools service and the
	// in-host "audit" observer, cleaned up with t.Cleanup.
	New(t *testing.T, cfg Config) Host
}

// Config is what a case may ask of a new host.
type Config struct {
	// ApprovalTimeout is the pipeline's approval timeout; zero leaves the
	// harness's default, which must be generous (a few seconds at least).
	ApprovalTimeout time.Duration
	// ListenerTimeout bounds each remote listener (a filter's RPC, a
	// wrapper's own time); zero leaves the harness's default.
	ListenerTimeout time.Duration
}

// Host is one kernel with the tools service, as a case drives it.
type Host interface {
	// Load loads a plugin built from p and returns the kernel's load error
	// (a failed apply step). A spec the harness cannot build fails t.
	Load(t *testing.T, p PluginSpec) error
	// Unload ends a plugin's scope; an error fails t.
	Unload(t *testing.T, name string)
	// Execute calls a tool through the pipeline as the client "client".
	Execute(ctx context.Context, tool, args string) pipeline.Result
	// Audit returns what the host's audit observer saw, oldest first.
	Audit() []AuditRecord
	// Log returns the entries the plugins' behaviours wrote to the named
	// log (see spec.go), oldest first; nil when there are none.
	Log(name string) []string
	// Kernel is the host's kernel, for in-host policies and for the
	// kernel-level cases.
	Kernel() *kernel.Kernel
	// Tools is the host's tools service.
	Tools() *pipeline.Tools
}

// Killer is implemented by a Host whose plugins live in processes.
type Killer interface {
	// Kill ends the plugin's process abruptly (SIGKILL) and returns without
	// waiting for the host to notice. The plugin is not restarted until
	// Restart.
	Kill(t *testing.T, plugin string)
	// Restart starts a killed plugin again and returns once it is ACTIVE.
	Restart(t *testing.T, plugin string)
}

// Bounded is implemented by a Host whose listeners are remote and bounded
// by Config.ListenerTimeout (SPEC §5). An in-host listener is the host's
// own code and is not bounded.
type Bounded interface {
	// ListenerTimeout is the bound in force.
	ListenerTimeout() time.Duration
}

// AuditRecord is one call as the host's stage-5 audit observer saw it.
type AuditRecord struct {
	ID        string
	Tool      string
	OK        bool
	Code      pipeline.Code
	DecidedBy string
}

// Caller is the caller name Host.Execute uses.
const Caller = "client"

// AuditPlugin is the name of the host's audit observer plugin.
const AuditPlugin = "audit"

// Run runs every conformance case against h, each as a named subtest.
func Run(t *testing.T, h Harness) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, h) })
	}
}

// Names lists the cases Run runs, in order.
func Names() []string {
	out := make([]string, len(cases))
	for i, c := range cases {
		out[i] = c.name
	}
	return out
}

type testCase struct {
	name string
	run  func(t *testing.T, h Harness)
}
