package wire

import (
	"context"
	"errors"
	"time"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// GRPCPlugin is the go-plugin glue for the plugkit protocol. It speaks gRPC
// only: NetRPCUnsupportedPlugin makes a net/rpc dispense fail.
//
// In the plugin process PluginServer is set and go-plugin calls GRPCServer; in the
// host go-plugin calls GRPCClient, which returns a *PluginClient.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin

	// PluginServer builds the plugin-side Plugin service. It receives the broker
	// because the service dials the host's callback service through it at
	// Apply. Nil in the host.
	PluginServer func(broker *plugin.GRPCBroker) pb.PluginServer

	// MaxMessageBytes limits the host callback server that
	// PluginClient.ServeHost starts; 0 means DefaultMaxMessageBytes.
	MaxMessageBytes int
}

var _ plugin.GRPCPlugin = (*GRPCPlugin)(nil)

// GRPCServer registers the plugin-side service.
func (p *GRPCPlugin) GRPCServer(broker *plugin.GRPCBroker, s *grpc.Server) error {
	if p.PluginServer == nil {
		return errors.New("wire: GRPCPlugin.PluginServer is nil: nothing to serve")
	}
	pb.RegisterPluginServer(s, p.PluginServer(broker))
	return nil
}

// GRPCClient returns a *PluginClient. ctx is go-plugin's: it ends when the
// plugin process exits.
func (p *GRPCPlugin) GRPCClient(ctx context.Context, broker *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	limit := p.MaxMessageBytes
	if limit == 0 {
		limit = DefaultMaxMessageBytes
	}
	return &PluginClient{
		PluginClient:    pb.NewPluginClient(conn),
		Broker:          broker,
		MaxMessageBytes: limit,
		exited:          ctx.Done(),
	}, nil
}

// PluginClient is what the host Dispenses: the typed Plugin client plus what
// is needed to give the plugin its Host callback service.
type PluginClient struct {
	pb.PluginClient

	// Broker is the go-plugin broker of this plugin's connection.
	Broker *plugin.GRPCBroker

	// MaxMessageBytes is the size limit of the host callback server.
	MaxMessageBytes int

	exited <-chan struct{}
}

// Exited is closed when the plugin process has exited.
func (c *PluginClient) Exited() <-chan struct{} { return c.exited }

// ServeHost serves h to this plugin on a fresh broker id and returns the id
// to put in ApplyRequest.host_broker_id. Call it once per plugin process: the
// plugin dials it once and keeps the connection. The server stops when the
// go-plugin client is killed (the broker closes). extra are added to the
// server's options.
func (c *PluginClient) ServeHost(h pb.HostServer, extra ...grpc.ServerOption) uint32 {
	id := c.Broker.NextId()
	newServer := NewGRPCServer(c.MaxMessageBytes, extra...)
	listening := make(chan struct{})
	go c.Broker.AcceptAndServe(id, func(opts []grpc.ServerOption) *grpc.Server {
		s := newServer(opts)
		pb.RegisterHostServer(s, h)
		close(listening)
		return s
	})
	// AcceptAndServe makes the listener for id before it builds the
	// server. The plugin must not be told the id before then: its
	// connection is dialled lazily, on its first call back, and a knock
	// that comes before the listener fails that call ("no listener for id
	// 1"), after the plugin's own retry of the dial has passed.
	select {
	case <-listening:
	case <-c.exited:
	case <-time.After(serveHostWait):
	}
	return id
}

// serveHostWait bounds ServeHost's wait for its listener; AcceptAndServe
// makes it at once unless the broker failed, and then the plugin's calls
// back fail and say so.
const serveHostWait = 10 * time.Second

// ClientPlugins is the plugin set a host passes as go-plugin's
// ClientConfig.Plugins. Use it with HandshakeConfig: Handshake,
// AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC} and
// GRPCDialOptions: DialOptions(maxBytes), and put MaxMessageEnv(maxBytes) in
// the command's environment.
func ClientPlugins(maxBytes int) plugin.PluginSet {
	return plugin.PluginSet{PluginName: &GRPCPlugin{MaxMessageBytes: maxBytes}}
}
