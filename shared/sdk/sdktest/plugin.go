package sdktest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/test/bufconn"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Options say how Start runs a plugin. The zero value is a fake host with
// every default, the configuration {} and the default message limit.
type Options struct {
	// Host is the fake host; nil is &Host{}.
	Host *Host
	// Config is the configuration Apply decodes, as JSON (the deployment
	// file's config block); "" is {}.
	Config string
	// MaxMessageBytes is the message limit both ways; 0 is the host's
	// default.
	MaxMessageBytes int
}

// Plugin is a plugin under test, served in the test's process and applied.
// Its methods are safe for concurrent use.
type Plugin struct {
	// Describe is the plugin's answer to Describe.
	Describe *pb.DescribeResponse

	client  pb.PluginClient
	host    *hostServer
	closers []func() // in reverse on Close
}

// brokerID is the broker id the fake host's Applies carry.
const brokerID = 1

// Start serves def in the test's process, connects a fake host, asks
// Describe and applies opts.Config, and fails the test if any of it fails.
// Everything it started ends when the test does.
func Start[C any](t testing.TB, def sdk.Plugin[C], opts Options) *Plugin {
	t.Helper()
	p := StartUnapplied(t, def, opts)
	if err := p.Apply(t.Context(), opts.Config); err != nil {
		t.Fatal(err)
	}
	return p
}

// StartUnapplied is Start without the Apply: for a test of Apply itself.
func StartUnapplied[C any](t testing.TB, def sdk.Plugin[C], opts Options) *Plugin {
	t.Helper()
	p, err := New(t.Context(), def, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// New is StartUnapplied outside a test (an Example, a benchmark's setup):
// the caller applies the plugin and calls Close.
func New[C any](ctx context.Context, def sdk.Plugin[C], opts Options) (*Plugin, error) {
	max := opts.MaxMessageBytes
	if max <= 0 {
		max = wire.DefaultMaxMessageBytes
	}
	h := opts.Host
	if h == nil {
		h = &Host{}
	}
	hs := &hostServer{h: h, chain: newChains()}
	p := &Plugin{host: hs}
	hs.chain.p = p

	hostLis := bufconn.Listen(1 << 20)
	hostSrv := grpc.NewServer(wire.ServerOptions(max)...)
	pb.RegisterHostServer(hostSrv, hs)
	go func() { _ = hostSrv.Serve(hostLis) }()
	p.closers = append(p.closers, hostSrv.Stop)

	pluginLis := bufconn.Listen(1 << 20)
	served, err := sdk.ServeInProcess(def, pluginLis, max, nil,
		func(_ context.Context, id uint32, dopts ...grpc.DialOption) (*grpc.ClientConn, error) {
			if id != brokerID {
				return nil, fmt.Errorf("fake host: no service for broker id %d (the host sent %d)", id, brokerID)
			}
			return grpc.NewClient("passthrough:///host", append(dopts, bufDial(hostLis)...)...)
		})
	if err != nil {
		p.Close()
		return nil, err
	}
	p.closers = append(p.closers, served.Stop)
	conn, err := grpc.NewClient("passthrough:///plugin", append(wire.DialOptions(max), bufDial(pluginLis)...)...)
	if err != nil {
		p.Close()
		return nil, fmt.Errorf("dialling the plugin: %w", err)
	}
	p.closers = append(p.closers, func() { _ = conn.Close() })
	p.client = pb.NewPluginClient(conn)
	if p.Describe, err = p.client.Describe(ctx, &pb.DescribeRequest{}); err != nil {
		p.Close()
		return nil, fmt.Errorf("describe the plugin: %w", err)
	}
	return p, nil
}

// Close stops the plugin and the fake host at once, without Shutdown.
func (p *Plugin) Close() {
	for i := len(p.closers) - 1; i >= 0; i-- {
		p.closers[i]()
	}
	p.closers = nil
}

func bufDial(l *bufconn.Listener) []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) { return l.DialContext(ctx) }),
	}
}

// Apply applies config (JSON, "" is {}) as the host does: it forgets
// every registration first, as the host undoes the plugin's scope before
// an Apply on the same process. An error is the plugin's (a config it
// refuses, its Apply's error) or the call's.
func (p *Plugin) Apply(ctx context.Context, config string) error {
	if config == "" {
		config = "{}"
	}
	p.host.forget()
	resp, err := p.client.Apply(ctx, &pb.ApplyRequest{ConfigJson: []byte(config), HostBrokerId: brokerID})
	if err != nil {
		return fmt.Errorf("Apply: %w", err)
	}
	if resp.GetError() != "" {
		return fmt.Errorf("Apply failed: %s", resp.GetError())
	}
	return nil
}

// Shutdown asks the plugin to stop, as the host does before it ends the
// process: calls in flight finish and the plugin's Stop hook runs.
func (p *Plugin) Shutdown(ctx context.Context) error {
	resp, err := p.client.Shutdown(ctx, &pb.ShutdownRequest{})
	if err != nil {
		return fmt.Errorf("Shutdown: %w", err)
	}
	if resp.GetError() != "" {
		return fmt.Errorf("Shutdown failed: %s", resp.GetError())
	}
	return nil
}

// Client is the plugin's gRPC client, for a test of the protocol itself.
func (p *Plugin) Client() pb.PluginClient { return p.client }

// Registrations lists what the plugin has registered and not disposed, in
// order.
func (p *Plugin) Registrations() []Registration { return p.host.registrations() }

// Problems lists the problems the plugin reported (Context.ReportProblem).
func (p *Plugin) Problems() []string {
	p.host.mu.Lock()
	defer p.host.mu.Unlock()
	var out []string
	for _, r := range p.host.problems {
		out = append(out, r.GetProblem())
	}
	return out
}

// Tools returns the descriptors of the tools the plugin registered.
func (p *Plugin) Tools() []wire.ToolDescriptor {
	var out []wire.ToolDescriptor
	for _, r := range p.Registrations() {
		if t, ok := r.Request.(*pb.RegisterToolRequest); ok {
			out = append(out, wire.ToolDescriptorFromProto(t.GetTool()))
		}
	}
	return out
}

// Execution returns a call of tool with arguments (JSON, "" is {}) as the
// host freezes it: caller "sdktest", and the tool's descriptor when the
// plugin registered it.
func (p *Plugin) Execution(tool, args string) wire.Execution {
	if args == "" {
		args = "{}"
	}
	e := wire.Execution{ID: "sdktest-1", Name: tool, Arguments: json.RawMessage(args), Caller: "sdktest"}
	if r, ok := p.tool(tool); ok {
		e.Tool = wire.ToolDescriptorFromProto(r.GetTool())
		if e.Tool.Owner == "" {
			e.Tool.Owner = p.Describe.GetName()
		}
	}
	return e
}

func (p *Plugin) tool(name string) (*pb.RegisterToolRequest, bool) {
	for _, r := range p.Registrations() {
		if t, ok := r.Request.(*pb.RegisterToolRequest); ok && t.GetTool().GetName() == name {
			return t, true
		}
	}
	return nil, false
}

// listeners returns the registrations of stage, in order, that want a
// call of tool.
func (p *Plugin) listeners(stage pb.Stage, tool string) []*pb.ListenRequest {
	var out []*pb.ListenRequest
	for _, r := range p.Registrations() {
		l, ok := r.Request.(*pb.ListenRequest)
		if ok && l.GetStage() == stage && wants(l.GetTools(), tool) {
			out = append(out, l)
		}
	}
	return out
}

// wants reads an interest filter: empty is every tool.
func wants(tools []string, tool string) bool {
	return len(tools) == 0 || slices.Contains(tools, tool)
}
