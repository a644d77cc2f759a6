package remote

import (
	"context"
	"encoding/json"
	"slices"
	"time"

	"github.com/hashicorp/go-hclog"
	"go.opentelemetry.io/otel/trace"

	"github.com/plugkit-go/plugkit/egress"
	"github.com/plugkit-go/plugkit/sandbox"
	"github.com/plugkit-go/plugkit/tokenexchange"
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
	// Sandbox, when set, confines the process (package sandbox): the
	// launcher applies it between fork and exec.
	Sandbox *sandbox.Policy
	// MaxResultBytes bounds a result of one of the plugin's tools (larger
	// ends the call TOOL_ERROR before any stage-4 listener sees it) and the
	// values its result observers receive (larger arrives as size, digest
	// and head). 0 is DefaultMaxResultBytes.
	MaxResultBytes int
	// MaxArgumentBytes bounds the arguments of a call to one of the
	// plugin's tools (pipeline.Tool.MaxArgumentBytes); 0 is the host's.
	MaxArgumentBytes int
	// Upstream, when set, has the host obtain a token for the plugin's
	// upstream for each call of its tools (Options.Tokens): a call without
	// one is DENIED naming the upstream and why, and the token goes to
	// the plugin with that call only (ExecuteToolRequest.upstream_token).
	Upstream *tokenexchange.Upstream
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
	// UnaryCalls sends every call into a plugin, and the plugin's calls
	// back, as an RPC of its own, even with a plugin that serves frames
	// (call lanes, or the call stream Plugin.Calls), which are otherwise
	// used.
	UnaryCalls bool
	// NoCallLanes gives plugins no call lanes (socket pairs they inherit):
	// calls then go on a plugin's call stream if it serves one, and its
	// calls back as RPCs.
	NoCallLanes bool
	// MaxMessageBytes is the gRPC message limit on both sides.
	MaxMessageBytes int
	// ListenerTimeout bounds each remote listener: a filter's one RPC, a
	// wrapper's own time (not counting the time inside next). Past it a
	// stage-1 listener or guard denies, a stage-4 listener blocks, and a
	// stage-3 listener ends the call TOOL_TIMEOUT.
	ListenerTimeout time.Duration
	// StartTimeout bounds the handshake with a new process.
	StartTimeout time.Duration
	// DrainTimeout bounds a graceful stop.
	DrainTimeout time.Duration
	// Receipts asks critical plugins' result listeners where they recorded
	// each result (Manager.Receipts hands them out).
	Receipts bool
	// SocketDir is where the private socket folder is made (default: the
	// system's temporary folder).
	SocketDir string
	// ExplainOnly tells every plugin (wire.EnvExplainOnly) that this host
	// makes no call for real: `host test` without a case that executes.
	ExplainOnly bool
	// Launcher is the binary that confines a sandboxed plugin before
	// exec'ing it: any binary that imports package sandbox serves its
	// hidden subcommand. The default is the running executable.
	Launcher string
	// ReceiptsFrom names the plugin whose receipts the host hands back
	// (with Receipts); "" takes them from a plugin that declares receipts
	// (Describe), of which the deployment has at most one. Receipts from
	// any other plugin are dropped: a second critical plugin with a result
	// listener cannot put its own receipt in place of the audit's.
	ReceiptsFrom string
	// Guarded are the host's own folders (the admin socket's, the host
	// registry): a sandboxed plugin whose write paths reach one, as
	// written or through a symbolic link made since, is not started, at
	// any start (first, reload, crash restart).
	Guarded []sandbox.Guarded
	Logger  hclog.Logger
	// OnRPC, when set, is told how long each call into a plugin's handler
	// took, by plugin and kind (tool, pre_execute, guard, execute,
	// post_execute, approver), for metrics. It must not block.
	OnRPC func(plugin, kind string, d time.Duration)
	// TracerProvider, when set, traces each call into a plugin process: a
	// client span per RPC (the child of whatever span the call's context
	// holds), whose W3C trace context goes to the plugin in the RPC's
	// metadata. The plugin is started with PLUGKIT_TRACE=1 and hands the
	// spans it makes to ExportSpans, which must then be set too.
	TracerProvider trace.TracerProvider
	// ExportSpans sends on the spans a plugin handed to the host: otlp is an
	// OTLP ExportTraceServiceRequest.
	ExportSpans func(ctx context.Context, plugin string, otlp []byte) error
	// OnResourceUpdated, when set, is told that a resource plugin offers
	// changed (Host.ResourceUpdated), by the plugin's own URI, or with uri
	// "" that the plugin's list of resources changed. It must not
	// block.
	OnResourceUpdated func(plugin, uri string)

	// Elicit puts a plugin's question (MCP ElicitRequest params as JSON) to
	// the client that made the call e and returns its answer (an
	// ElicitResult as JSON). Without it every question is declined.
	Elicit ElicitFunc
	// Tokens obtains the upstream tokens of the plugins whose Spec has an
	// Upstream; without it their calls are DENIED.
	Tokens *tokenexchange.Broker
	// EgressResolver resolves names for the egress proxies of sandboxed
	// plugins with an egress list (nil: the system's resolver).
	EgressResolver egress.Resolver
	// OnEgress, when set, is told of every connection a plugin asked its
	// egress proxy for, allowed or refused, once it has ended. It must
	// not block for long: the proxy's handler of that connection waits.
	OnEgress func(egress.Event)
}
