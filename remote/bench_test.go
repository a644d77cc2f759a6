package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/metrics"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/sandbox"
	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
	"github.com/plugkit-go/plugkit/tracing"
)

// The benchmarks run side by side so that their ratios mean something:
//
//   - RawGoPluginRPC is the floor: one go-plugin gRPC unary call
//     (Plugin.ExecuteTool of the test plugin's add tool) through the
//     dispensed client, with the transport the manager uses (AutoMTLS,
//     no broker multiplexing, the same limits) and no pipeline;
//   - RemoteTool is the same tool through the whole pipeline, no listener:
//     the host's overhead on top of the floor, less what the call lane
//     saves against the call stream (RemoteToolStream) and an RPC per
//     call (RemoteToolUnary);
//   - RemotePipeline adds a pre-execute filter, a guard, a post-execute
//     filter and a stage-5 observer, each in its own process: four RPCs the
//     caller waits for (tool + three filters); the observer must add none.
//     RawGoPluginRPC4Processes is its floor: four bare calls, one to each
//     of four processes;
//   - RemoteGuards4 has four guards in four processes, which run at once;
//   - RemoteToolObserved is RemoteTool with metrics and tracing on (every
//     call traced, host and plugin): what observing a deployment costs;
//   - the Parallel variants run 64 concurrent callers;
//   - PluginStart is spawn to ACTIVE.

// benchArgs are the arguments of every benchmarked call.
const benchArgs = `{"a":2,"b":3}`

// benchParallelism makes RunParallel use 64 goroutines.
func benchParallelism(b *testing.B) {
	b.SetParallelism(max(1, 64/runtime.GOMAXPROCS(0)))
}

// rawHost is the least a host must answer for the test plugin to apply: it
// records the tools' handler ids.
type rawHost struct {
	pb.UnimplementedHostServer
	mu    sync.Mutex
	tools map[string]string // tool name → handler id
}

func (h *rawHost) RegisterTool(_ context.Context, req *pb.RegisterToolRequest) (*pb.RegisterToolResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.tools[req.GetTool().GetName()] = req.GetHandlerId()
	return &pb.RegisterToolResponse{RegistrationId: "r" + strconv.Itoa(len(h.tools))}, nil
}

// startRaw starts the test plugin with go-plugin alone, applies it with the
// add tool, and returns its client and the request that calls add (the
// same request the manager's proxy sends).
func startRaw(b *testing.B) (*wire.PluginClient, *pb.ExecuteToolRequest) {
	b.Helper()
	limit := wire.DefaultMaxMessageBytes
	cmd := exec.Command(testPlugin)
	// Its socket in the benchmark's folder, removed with it: a killed
	// plugin leaves its socket behind. So does the host's callback
	// listener, which go-plugin (without a runner of ours) makes in the
	// process's temporary folder.
	socketDir := b.TempDir()
	b.Setenv("TMPDIR", socketDir)
	cmd.Env = []string{wire.MaxMessageEnv(limit), "PLUGIN_UNIX_SOCKET_DIR=" + socketDir}
	client := plugin.NewClient(&plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.ClientPlugins(limit),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         true,
		Logger:           hclog.NewNullLogger(),
		GRPCDialOptions:  wire.DialOptions(limit),
		SkipHostEnv:      true,
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: socketDir},
	})
	b.Cleanup(client.Kill)
	rpc, err := client.Client()
	if err != nil {
		b.Fatal(err)
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		b.Fatal(err)
	}
	pc := raw.(*wire.PluginClient)
	host := &rawHost{tools: map[string]string{}}
	cfg, _ := json.Marshal(pluginConfig{Spec: conformance.PluginSpec{Name: "raw", Tools: []conformance.ToolSpec{addTool("")}}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := pc.Apply(ctx, &pb.ApplyRequest{ConfigJson: cfg, HostBrokerId: pc.ServeHost(host)})
	if err != nil || resp.GetError() != "" {
		b.Fatalf("apply: %v %s", err, resp.GetError())
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_, _ = pc.Shutdown(ctx, &pb.ShutdownRequest{})
	})
	req := &pb.ExecuteToolRequest{HandlerId: host.tools["add"], Execution: &pb.Execution{
		Id: "0123abcd-1", Name: "add", ArgumentsJson: []byte(benchArgs), Caller: "client",
		Tool: &pb.ToolDescriptor{Name: "add", Description: "Adds a and b.", ParametersJson: []byte(addSchema), Owner: "raw"},
	}}
	return pc, req
}

func rawCall(b *testing.B, ctx context.Context, pc *wire.PluginClient, req *pb.ExecuteToolRequest) {
	resp, err := pc.ExecuteTool(ctx, req)
	if err != nil || string(resp.GetValueJson()) != "5" {
		b.Fatalf("add = %v, %v", resp, err)
	}
}

// BenchmarkRawGoPluginRPC is the floor: a bare go-plugin gRPC call.
func BenchmarkRawGoPluginRPC(b *testing.B) {
	pc, req := startRaw(b)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		rawCall(b, ctx, pc, req)
	}
}

// BenchmarkRawGoPluginRPC4Processes is RemotePipeline's floor as the
// machine sees it: one op is four bare calls, one to each of four plugin
// processes in turn. A call to a process that has been idle while three
// others were called costs more than a call to a process called
// back-to-back (its threads have gone to sleep), so four times
// RawGoPluginRPC underestimates what four RPCs to four processes cost.
func BenchmarkRawGoPluginRPC4Processes(b *testing.B) {
	type target struct {
		pc  *wire.PluginClient
		req *pb.ExecuteToolRequest
	}
	var ts []target
	for range 4 {
		pc, req := startRaw(b)
		ts = append(ts, target{pc, req})
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		for _, t := range ts {
			rawCall(b, ctx, t.pc, t.req)
		}
	}
}

// BenchmarkRawGoPluginRPCParallel is the floor with 64 concurrent callers.
func BenchmarkRawGoPluginRPCParallel(b *testing.B) {
	pc, req := startRaw(b)
	ctx := context.Background()
	benchParallelism(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(p *testing.PB) {
		for p.Next() {
			rawCall(b, ctx, pc, req)
		}
	})
}

// benchHost is a host with the add tool in a plugin process, and the given
// listener plugins, each in a process of its own; no in-host listener.
func benchHost(b *testing.B, listeners ...conformance.PluginSpec) *processHost {
	return benchHostIn(b, false, listeners...)
}

// benchHostIn is benchHost with every plugin sandboxed or not.
func benchHostIn(b *testing.B, sandboxed bool, listeners ...conformance.PluginSpec) *processHost {
	b.Helper()
	h := newBareHost(b, conformance.Config{}, remote.Options{})
	if sandboxed {
		h.sandbox = testSandbox(h.dir)
	}
	var env []string
	if path := os.Getenv("PLUGKIT_BENCH_PLUGIN_CPUPROFILE"); path != "" {
		// The plugin's side of the calls: see docs/remote-call-profile.md.
		env = append(env, "TESTPLUGIN_CPUPROFILE="+path)
	}
	mustLoad(b, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{}, env...)
	for _, l := range listeners {
		mustLoad(b, h, l, pluginConfig{})
	}
	return h
}

// pipelineListeners are RemotePipeline's plugins: filters that pass, a
// silent guard and an observer that logs nowhere.
var pipelineListeners = []conformance.PluginSpec{
	{Name: "pre", Pre: []conformance.PreSpec{{Behaviour: conformance.PrePass}}},
	{Name: "guard", Guards: []conformance.GuardSpec{{Behaviour: conformance.GuardSilent}}},
	{Name: "post", Post: []conformance.PostSpec{{Behaviour: conformance.PostPass}}},
	{Name: "observer", Observers: []conformance.ObserverSpec{{Behaviour: conformance.ObserveRecord}}},
}

func hostCall(b *testing.B, ctx context.Context, h *processHost, args json.RawMessage) {
	r := h.tools.Execute(ctx, "add", args, conformance.Caller)
	if !r.OK || valueOf(r) != "5" {
		b.Fatalf("add = %s", describe(r))
	}
}

// BenchmarkRemoteTool is a remote tool through the whole pipeline, no
// listener.
func BenchmarkRemoteTool(b *testing.B) {
	h := benchHost(b)
	ctx, args := context.Background(), json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		hostCall(b, ctx, h, args)
	}
}

// BenchmarkRemoteToolLargeSchema is RemoteTool with a tool whose schema is
// ≈16 KB, as a bridged server's tools often are: the descriptor crosses to
// the plugin once (Execution.tool_ref), so a call should cost what
// RemoteTool's does.
func BenchmarkRemoteToolLargeSchema(b *testing.B) {
	h := newBareHost(b, conformance.Config{}, remote.Options{})
	tool := addTool("")
	tool.Parameters = largeSchema(16 << 10)
	mustLoad(b, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{tool}}, pluginConfig{})
	ctx, args := context.Background(), json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		hostCall(b, ctx, h, args)
	}
}

// largeSchema is addSchema's a and b with optional described properties
// until it is about size bytes.
func largeSchema(size int) string {
	var props strings.Builder
	props.WriteString(`"a":{"type":"number"},"b":{"type":"number"}`)
	for i := 0; props.Len() < size; i++ {
		fmt.Fprintf(&props, `,"option_%d":{"type":"string","description":"An optional setting that changes nothing in this benchmark; it is here for its bytes."}`, i)
	}
	return `{"type":"object","required":["a","b"],"properties":{` + props.String() + `}}`
}

// BenchmarkRemoteToolStream is RemoteTool with the call a frame on the
// plugin's gRPC call stream (Options.NoCallLanes) instead of its call lane.
func BenchmarkRemoteToolStream(b *testing.B) { benchTransport(b, remote.Options{NoCallLanes: true}) }

// BenchmarkRemoteToolUnary is RemoteTool with the call as an RPC of its
// own (Options.UnaryCalls) instead of a frame.
func BenchmarkRemoteToolUnary(b *testing.B) { benchTransport(b, remote.Options{UnaryCalls: true}) }

func benchTransport(b *testing.B, opts remote.Options) {
	h := newBareHost(b, conformance.Config{}, opts)
	mustLoad(b, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	ctx, args := context.Background(), json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		hostCall(b, ctx, h, args)
	}
}

// BenchmarkRemoteToolObserved is RemoteTool with the host's metrics, then
// with tracing too at sample 1.0 and at 0.01: a span per call, per stage
// and per RPC in the host, the plugin's server span handed back over
// Host.ExportSpans, all batched to an exporter that drops them (what a
// collector does with them is not the host's cost).
func BenchmarkRemoteToolObserved(b *testing.B) {
	b.Run("metrics", func(b *testing.B) { benchObserved(b, -1) })
	b.Run("metrics+traces/sample=1", func(b *testing.B) { benchObserved(b, 1) })
	b.Run("metrics+traces/sample=0.01", func(b *testing.B) { benchObserved(b, 0.01) })
}

// benchObserved runs RemoteTool with metrics, and tracing at sample unless
// it is negative.
func benchObserved(b *testing.B, sample float64) {
	m := metrics.New("bench", func() []remote.Status { return nil }, func() int64 { return 0 })
	popts := pipeline.Options{OnCall: m.Call, OnApproval: m.Approval}
	opts := remote.Options{OnRPC: m.RPC}
	var exported atomic.Int64
	if sample >= 0 {
		tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(tracetest.NewNoopExporter()), sdktrace.WithSampler(tracing.Sampler(sample)))
		b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
		popts.Tracer = tp.Tracer("bench")
		opts.TracerProvider = tp
		opts.ExportSpans = func(context.Context, string, []byte) error {
			exported.Add(1)
			return nil
		}
	}
	h := newBareHostWith(b, conformance.Config{}, popts, opts)
	mustLoad(b, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	ctx, args := context.Background(), json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		hostCall(b, ctx, h, args)
	}
	if sample != 1 {
		return
	}
	b.StopTimer()
	// The plugin's spans did come back (its batches go every 200 ms).
	deadline := time.Now().Add(5 * time.Second)
	for exported.Load() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if exported.Load() == 0 {
		b.Fatal("the plugin handed back no spans")
	}
}

// BenchmarkRemoteToolSandboxed is RemoteTool with the plugin confined
// (testSandbox): the sandbox costs nothing per call.
func BenchmarkRemoteToolSandboxed(b *testing.B) {
	h := benchHostIn(b, true)
	ctx, args := context.Background(), json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		hostCall(b, ctx, h, args)
	}
}

// BenchmarkRemoteToolParallel is RemoteTool with 64 concurrent callers.
func BenchmarkRemoteToolParallel(b *testing.B) {
	h := benchHost(b)
	ctx, args := context.Background(), json.RawMessage(benchArgs)
	benchParallelism(b)
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(p *testing.PB) {
		for p.Next() {
			hostCall(b, ctx, h, args)
		}
	})
}

// BenchmarkRemotePipeline is RemoteTool plus a remote pre-execute filter,
// guard, post-execute filter and observer, each in its own process.
func BenchmarkRemotePipeline(b *testing.B) {
	h := benchHost(b, pipelineListeners...)
	ctx, args := context.Background(), json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		hostCall(b, ctx, h, args)
	}
}

// BenchmarkRemoteGuards4 is RemoteTool plus four silent guards, each in
// its own process. Remote guards run concurrently (stage 2 is monotonic),
// so the four cost about one round trip, not four: compare with
// RemoteTool (no guard) and RawGoPluginRPC4Processes (four in a row).
func BenchmarkRemoteGuards4(b *testing.B) {
	var guards []conformance.PluginSpec
	for _, name := range []string{"g1", "g2", "g3", "g4"} {
		guards = append(guards, conformance.PluginSpec{Name: name, Guards: []conformance.GuardSpec{{Behaviour: conformance.GuardSilent}}})
	}
	h := benchHost(b, guards...)
	ctx, args := context.Background(), json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		hostCall(b, ctx, h, args)
	}
}

// BenchmarkRemoteGuard is RemoteTool plus one silent guard in a process of
// its own; BenchmarkRemoteGuardPython is the same guard written in Python
// (internal/testkit/pytestplugin). The difference of each from RemoteTool is what
// one remote check costs in that language.
func BenchmarkRemoteGuard(b *testing.B) { benchGuard(b, false) }

func BenchmarkRemoteGuardPython(b *testing.B) { benchGuard(b, true) }

func benchGuard(b *testing.B, python bool) {
	h := benchHost(b)
	if python {
		h.binary = pythonPlugin(b)
	}
	mustLoad(b, h, conformance.PluginSpec{Name: "G", Guards: []conformance.GuardSpec{{Behaviour: conformance.GuardSilent}}}, pluginConfig{})
	ctx, args := context.Background(), json.RawMessage(benchArgs)
	b.ReportAllocs()
	for b.Loop() {
		hostCall(b, ctx, h, args)
	}
}

// pythonHook is a policy check the way agents that shell out run one: a
// Python program started per check, the call as JSON on stdin, the
// decision as JSON on stdout.
const pythonHook = `import json, sys
call = json.load(sys.stdin)
json.dump({"deny": "a is over 100" if call["arguments"].get("a", 0) > 100 else ""}, sys.stdout)
`

// BenchmarkPythonHookPerCheck is one such check: what RemoteGuardPython
// replaces.
func BenchmarkPythonHookPerCheck(b *testing.B) {
	pythonPlugin(b) // the same python3, or the reason it is missing
	script := filepath.Join(b.TempDir(), "hook.py")
	if err := os.WriteFile(script, []byte(pythonHook), 0o600); err != nil {
		b.Fatal(err)
	}
	benchHook(b, "/usr/bin/env", "python3", script)
}

// BenchmarkGoHookPerCheck is the same check by a minimal Go program
// (internal/testkit/testhook) started per check: what RemoteGuard replaces.
func BenchmarkGoHookPerCheck(b *testing.B) {
	hook := filepath.Join(b.TempDir(), "testhook")
	if err := testkit.GoBuild(hook, "github.com/plugkit-go/plugkit/internal/testkit/testhook"); err != nil {
		b.Fatal(err)
	}
	benchHook(b, hook)
}

// benchHook starts the hook command per check, the call on its stdin.
func benchHook(b *testing.B, command ...string) {
	in := []byte(`{"tool":"add","arguments":` + benchArgs + `}`)
	for b.Loop() {
		cmd := exec.Command(command[0], command[1:]...)
		cmd.Env = []string{}
		cmd.Stdin = bytes.NewReader(in)
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("hook: %v", err)
		}
		var d struct{ Deny string }
		if err := json.Unmarshal(out, &d); err != nil || d.Deny != "" {
			b.Fatalf("hook answered %q (%v)", out, err)
		}
	}
}

// BenchmarkPluginStart is one plugin from spawn to ACTIVE (its unload is
// not timed).
func BenchmarkPluginStart(b *testing.B) { benchPluginStart(b, nil) }

// BenchmarkPluginStartSandboxed is PluginStart with the plugin confined:
// the launcher's own start, Landlock and a network namespace on top.
func BenchmarkPluginStartSandboxed(b *testing.B) {
	benchPluginStart(b, testSandbox(b.TempDir()))
}

func benchPluginStart(b *testing.B, sandbox *sandbox.Policy) {
	h := newBareHost(b, conformance.Config{}, remote.Options{})
	cfg, _ := json.Marshal(pluginConfig{Spec: conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{addTool("")}}})
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		if err := h.m.Load(ctx, remote.Spec{Name: "P", Path: testPlugin, Config: cfg, Sandbox: sandbox}); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if err := h.m.Unload(ctx, "P"); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
