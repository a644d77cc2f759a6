package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"github.com/hashicorp/go-plugin/runner"
	"go.opentelemetry.io/otel/trace"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/sandbox"
	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
	"github.com/plugkit-go/plugkit/tokenexchange"
)

// instance is one running plugin process.
type instance struct {
	process
	connection
	telemetry

	// live are the calls in flight on the plugin's tools, which the
	// plugin may put a question to the caller for (Host.Elicit).
	live   liveCalls
	elicit ElicitFunc // Options.Elicit
	spec   Spec
	name   string
	log    hclog.Logger
	tokens *tokenexchange.Broker // Options.Tokens
	obs    *observers
	// scope is the version of the plugin this process serves (set by apply).
	scope *kernel.Scope
	// durable takes its result listeners when the plugin is critical.
	durable *durableResults
	// mp is the plugin of a critical process, whose pre-execute listeners
	// and guards retry a call alone when the process dies during it
	// (solo.go); nil otherwise. solo is the gate a retry alone in this
	// process waits at.
	mp   *managed
	solo soloGate
	// preFilters, preWrappers and guards are the listeners the process
	// registered, each kind in order: a listener's slot names it in the
	// next process too.
	preMu       sync.Mutex
	preFilters  []preFilter
	preWrappers []preFilter
	guards      []preFilter
}

// process is the plugin's process: how it was started, from which binary,
// under what bounds, and how it is stopped.
type process struct {
	// egress is the process's egress proxy, nil without an egress list.
	egress  *egressRun
	gp      *plugin.Client
	cmd     *exec.Cmd   // go-plugin's: it runs and waits for it
	stderr  *stderrTail // the last lines of the process's stderr
	pid     int
	started time.Time
	// startTook is how long the process took from spawn to a connected
	// client (the handshake, AutoMTLS included).
	startTook time.Duration
	// binary is the binary's file as the process was started from it.
	binary   binaryID
	binaryOK bool
	stopOnce sync.Once
	stopping chan struct{} // closed when the host stops it on purpose
	// cleanup removes what was made for this process (a sandboxed plugin's
	// own socket folder, its cgroup); it runs once the process has ended.
	cleanup func()
	// cgroup is a sandboxed process's own cgroup; nil without one.
	cgroup *sandbox.Cgroup
	// crashedAt is when watch counted this process's exit as a crash
	// (guarded by mp.mu): the entry a proven crashing argument takes back.
	crashedAt time.Time
	// soloRetry is set while a call is retried alone in this process: its
	// death then is the call's doing and not counted as a crash.
	soloRetry atomic.Bool
}

// connection is the host's link to the process: the gRPC client, the call
// lanes, the Host service it calls back, and what its Describe declared.
type connection struct {
	client     *wire.PluginClient
	calls      *calls // the stage handlers' calls: as frames, or as RPCs
	unaryCalls bool   // Options.UnaryCalls
	// dryRun: the plugin's Describe says its listeners understand dry runs
	// (Execution.dry_run); without it, explain does not call them.
	dryRun bool
	// visibility: the plugin's Describe says its listeners answer the
	// visibility question (Execution.visibility); without it they count as
	// ones that may allow.
	visibility bool
	// receipts: the plugin's Describe declares it an audit that sends
	// receipts (Receipts.accepts).
	receipts bool
	// refs is nil unless the plugin keeps descriptors by ref (Describe's
	// tool_refs): then what it has been sent (see execution).
	refs  *toolRefs
	lanes *lanes // the host's ends of the call lanes; nil without them
	// host is the Host service of the version the process serves (set at
	// apply), which answers the calls back on the callback lane.
	host            atomic.Pointer[hostService]
	serveHost       []grpc.ServerOption // options of the Host service's server
	maxMessage      int
	listenerTimeout time.Duration
	drainTimeout    time.Duration
}

// telemetry is what the process reports and is measured by: spans, RPC
// times, resource updates (each bounded), and the problem it last reported.
type telemetry struct {
	traceCallbacks grpc.UnaryServerInterceptor                 // the server span of a traced call back on the lane
	tracerProvider trace.TracerProvider                        // Options.TracerProvider
	onRPC          func(plugin, kind string, d time.Duration)  // Options.OnRPC
	exportSpans    func(context.Context, string, []byte) error // Options.ExportSpans
	spanBatches    *rate.Limiter                               // bounds ExportSpans
	spansDropped   atomic.Int64                                // span batches refused so far
	onUpdated      func(plugin, uri string)                    // Options.OnResourceUpdated
	updates        *rate.Limiter                               // bounds ResourceUpdated
	updatesDropped atomic.Int64                                // updates refused so far
	// problem is what the process last reported keeps it from doing its
	// job (Host.ReportProblem); "" when nothing does.
	problemMu sync.Mutex
	problem   string
}

// setProblem records what the process reports, logging each change.
func (in *instance) setProblem(problem string) {
	in.problemMu.Lock()
	old := in.problem
	in.problem = problem
	in.problemMu.Unlock()
	switch {
	case problem == old:
	case problem != "":
		in.log.Error("plugin reports a problem", "problem", problem)
	default:
		in.log.Info("plugin reports its problem is over", "was", old)
	}
}

func (in *instance) currentProblem() string {
	in.problemMu.Lock()
	defer in.problemMu.Unlock()
	return in.problem
}

// launch starts the plugin's binary and connects to it. The process gets no
// environment from the host but the message limit, the spec's own entries
// and what go-plugin needs.
func (m *Manager) launch(ctx context.Context, spec Spec) (*instance, error) {
	log := m.log.Named(spec.Name)
	withLanes := !m.opts.UnaryCalls && !m.opts.NoCallLanes
	inherit := 0
	if withLanes {
		inherit = 2
	}
	cmd, socketDir, cgroup, eg, cleanup, err := m.command(spec, inherit)
	if err != nil {
		return nil, fmt.Errorf("plugin %s: %w", spec.Name, err)
	}
	cmd.Dir = spec.Dir
	// The plugin's socket and the host's callback socket go in a folder
	// go-plugin makes inside the host's private one and removes with the
	// process (it does so only with a runner of our choosing: the default
	// one, given as RunnerFunc), so no socket is ever left in the system's
	// temporary folder.
	cmd.Env = append([]string{
		wire.MaxMessageEnv(m.opts.MaxMessageBytes),
		"TMPDIR=" + socketDir,
		wire.EnvHost + "=" + strconv.Itoa(os.Getpid()),
	}, slices.Concat(spec.Env, sandboxEnv(spec.Sandbox), eg.env())...)
	if m.opts.ExplainOnly {
		cmd.Env = append(cmd.Env, wire.EnvExplainOnly+"=1")
	}
	group, err := socketGroup(spec)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("plugin %s: %w", spec.Name, err)
	}
	dial := wire.DialOptions(m.opts.MaxMessageBytes)
	var serveHost []grpc.ServerOption
	if tp := m.opts.TracerProvider; tp != nil {
		// Both ways: the host's RPCs into the plugin, and the plugin's
		// back into the host (a service call, a tool call, next).
		cmd.Env = append(cmd.Env, wire.EnvTrace+"=1")
		dial = append(dial, wire.TraceDialOption(tp))
		serveHost = append(serveHost, wire.TraceServerOption(tp))
	}
	var lanes *lanes
	if withLanes {
		if lanes, err = newLanes(cmd); err != nil {
			cleanup()
			return nil, fmt.Errorf("plugin %s: %w", spec.Name, err)
		}
	}
	if err := eg.pass(&cmd.ExtraFiles, inherit); err != nil {
		lanes.close()
		cleanup()
		return nil, fmt.Errorf("plugin %s: %w", spec.Name, err)
	}
	stderr := &stderrTail{}
	cfg := m.clientConfig(cmd, log, stderr, dial, &plugin.UnixSocketConfig{TempDir: socketDir, Group: group})
	if err := verifySum(spec); err != nil {
		cleanup()
		return nil, err
	}
	// Before the start: a change after it reads as a change (see Pin).
	binary, binaryOK := statBinary(spec.Path)
	began := time.Now()
	gp := plugin.NewClient(cfg)
	fail := func(what string, err error) (*instance, error) {
		gp.Kill()
		lanes.close()
		cleanup()
		// Kill has waited for go-plugin's goroutines, the one that reads
		// stderr and the one that waits for the process among them (or the
		// process never started and ProcessState stays nil).
		return nil, newLaunchError(fmt.Errorf("plugin %s: %s: %w", spec.Name, what, startFailure(err, cmd)), cmd, stderr, spec.Sandbox != nil)
	}
	rpc, err := gp.Client()
	lanes.started() // the process has its ends, or never will
	eg.started()
	if err != nil {
		return fail("start "+spec.Path, err)
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		return fail("connect", err)
	}
	in := &instance{
		spec:   spec,
		name:   spec.Name,
		log:    log,
		tokens: m.opts.Tokens,
		elicit: m.opts.Elicit,
		process: process{
			egress:    eg,
			gp:        gp,
			cmd:       cmd,
			stderr:    stderr,
			started:   time.Now(),
			startTook: time.Since(began),
			stopping:  make(chan struct{}),
			cleanup:   cleanup,
			cgroup:    cgroup,
			binary:    binary,
			binaryOK:  binaryOK,
		},
		connection: connection{
			client:          raw.(*wire.PluginClient),
			maxMessage:      m.opts.MaxMessageBytes,
			listenerTimeout: m.opts.ListenerTimeout,
			unaryCalls:      m.opts.UnaryCalls,
			lanes:           lanes,
			serveHost:       serveHost,
			drainTimeout:    m.opts.DrainTimeout,
		},
		telemetry: telemetry{
			tracerProvider: m.opts.TracerProvider,
			onRPC:          m.opts.OnRPC,
			exportSpans:    m.opts.ExportSpans,
			onUpdated:      m.opts.OnResourceUpdated,
			updates:        rate.NewLimiter(updatesPerSecond, 2*updatesPerSecond),
			spanBatches:    rate.NewLimiter(spanBatchesPerSecond, 2*spanBatchesPerSecond),
		},
	}
	// The process is ours (the runner started cmd); go-plugin's
	// ReattachConfig knows a pid only when it started the command itself.
	if cmd.Process != nil {
		in.pid = cmd.Process.Pid
	}
	in.calls = newCalls(in)
	in.obs = newObservers(in)
	if in.tracerProvider != nil {
		in.traceCallbacks = wire.TraceServerInterceptor(in.tracerProvider)
	}
	if lanes != nil {
		go in.serveCallbacks()
	}
	return in, nil
}

// clientConfig is go-plugin's configuration for starting cmd: the plugin
// protocol over gRPC alone, its stderr relayed to log and kept in stderr,
// its sockets where sockets says, and cmd run by a runner of our own.
func (m *Manager) clientConfig(cmd *exec.Cmd, log hclog.Logger, stderr *stderrTail, dial []grpc.DialOption, sockets *plugin.UnixSocketConfig) *plugin.ClientConfig {
	return &plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		VersionedPlugins: wire.VersionedClientPlugins(m.opts.MaxMessageBytes),
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         !m.opts.DisableMTLS,
		Logger:           goPluginLog{log},
		// go-plugin relays each stderr line to Logger and copies it here.
		Stderr:          stderr,
		GRPCDialOptions: dial,
		SkipHostEnv:     true,
		// No broker multiplexing: the plugin's connection is plain gRPC
		// over its Unix socket, and the host's callback service gets a
		// socket of its own that the plugin dials once, at its first
		// Apply. A plugin in any language can then speak the protocol
		// with a stock gRPC library (multiplexing would make it speak
		// yamux on its socket), and a Go plugin's calls are faster
		// without the yamux layer (see docs/remote-call-profile.md).
		GRPCBrokerMultiplex: false,
		StartTimeout:        m.opts.StartTimeout,
		UnixSocketConfig:    sockets,
		// go-plugin passes the environment it sets (the magic cookie,
		// the socket folder, its certificate) in a command of its own.
		RunnerFunc: func(_ hclog.Logger, gp *exec.Cmd, _ string) (runner.Runner, error) {
			cmd.Env = append(cmd.Env, gp.Env...)
			return newProcessRunner(cmd)
		},
	}
}

// verifySum checks the plugin's binary against the spec's SHA-256, when it
// names one.
func verifySum(spec Spec) error {
	if spec.SHA256 != "" {
		sum, err := hex.DecodeString(spec.SHA256)
		if err != nil || len(sum) != sha256.Size {
			return fmt.Errorf("plugin %s: sha256 %q is not a hex SHA-256 digest", spec.Name, spec.SHA256)
		}
		// Checked here rather than by go-plugin (SecureConfig), which would
		// hash what it starts: nothing, with a runner of our own, and the
		// launcher for a sandboxed plugin.
		if err := checkSum(spec.Path, &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}); err != nil {
			return fmt.Errorf("plugin %s: start %s: %w", spec.Name, spec.Path, err)
		}
	}
	return nil
}

// describe asks the plugin what it is. prepare is the config its first
// apply will get, when it is started to run (the plugin may begin its slow
// work now); nil when it is only asked.
func (in *instance) describe(ctx context.Context, prepare json.RawMessage) (*pb.DescribeResponse, error) {
	resp, err := in.client.Describe(ctx, &pb.DescribeRequest{PrepareConfigJson: prepare})
	if err != nil {
		return nil, in.callErr("describe", err)
	}
	// Set before Apply, so before any listener of the plugin exists.
	in.dryRun = resp.GetDryRun()
	in.visibility = resp.GetVisibility()
	in.receipts = resp.GetReceipts()
	if resp.GetToolRefs() {
		in.refs = &toolRefs{}
	}
	switch {
	case in.unaryCalls:
	case in.gp.NegotiatedVersion() < wire.FramesVersion:
		// An older plugin: it knows no frames, whatever it answered.
	case resp.GetCallLanes() && in.lanes != nil:
		in.calls.enable(in.lanes.calls)
	case resp.GetCallStream():
		in.calls.enable(nil)
	}
	return resp, nil
}

// untilExit returns ctx, also cancelled when the process exits: a stream
// to the process dies with it rather than waiting for a timeout.
func (in *instance) untilExit(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-in.client.Exited():
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func (in *instance) exited() bool {
	select {
	case <-in.client.Exited():
		return true
	default:
		return false
	}
}

// stop ends the process on purpose: queued results are delivered, the
// plugin is asked to shut down, then go-plugin ends the process. Calls in
// flight fail at once with the process gone.
func (in *instance) stop() {
	in.stopOnce.Do(func() {
		close(in.stopping)
		if !in.exited() {
			in.obs.drain(in.drainTimeout)
			// A bound of its own: the plugin's Stop (an audit log's last
			// fsync and close) runs even after a long drain.
			ctx, cancel := context.WithTimeout(context.Background(), in.drainTimeout)
			if _, err := in.client.Shutdown(ctx, &pb.ShutdownRequest{}); err != nil && !in.exited() {
				in.log.Debug("shutdown", "error", err)
			}
			cancel()
		}
		in.calls.close()
		in.lanes.close()
		in.gp.Kill()
		in.cleanup()
	})
}

// stoppedOnPurpose reports whether the host has begun stopping the process
// (so that its end is no crash).
func (in *instance) stoppedOnPurpose() bool {
	select {
	case <-in.stopping:
		return true
	default:
		return false
	}
}
