package sdk

import (
	"context"
	"fmt"
	"net"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// InProcess is a plugin served inside the calling process, on a listener
// the caller made: the same Plugin service a plugin binary serves, without
// go-plugin's process, handshake and TLS. It is what package sdktest runs
// a plugin's tests on; a plugin binary calls Serve.
type InProcess struct {
	srv  *server
	grpc *grpc.Server
}

// HostDialer dials the host's callback service for the broker id an Apply
// carries, as go-plugin's broker does for a plugin process. The options are
// the SDK's (message limits); the dialer adds its transport.
type HostDialer func(ctx context.Context, brokerID uint32, opts ...grpc.DialOption) (*grpc.ClientConn, error)

// ServeInProcess checks def as Serve does and serves it on lis until Stop,
// with maxBytes as the message limit both ways (0: the default) and log as
// the plugin's logger (nil: none).
func ServeInProcess[C any](def Plugin[C], lis net.Listener, maxBytes int, log hclog.Logger, dial HostDialer) (*InProcess, error) {
	d, err := def.build()
	if err != nil {
		return nil, fmt.Errorf("plugin %q cannot be served: %w", def.Name, err)
	}
	if dial == nil {
		return nil, fmt.Errorf("plugin %q: no host dialer", def.Name)
	}
	if maxBytes <= 0 {
		maxBytes = wire.DefaultMaxMessageBytes
	}
	if log == nil {
		log = hclog.NewNullLogger()
	}
	s := newServer(d, log, maxBytes, func(id uint32, opts ...grpc.DialOption) (*grpc.ClientConn, error) {
		return dial(context.Background(), id, opts...)
	})
	g := grpc.NewServer(append(wire.ServerOptions(maxBytes), recoverInterceptors(log)...)...)
	pb.RegisterPluginServer(g, s)
	go func() { _ = g.Serve(lis) }()
	return &InProcess{srv: s, grpc: g}, nil
}

// Stop ends the server at once (calls in flight fail) and drops the
// plugin's host connection. It does not run the plugin's Stop hook: the
// host's Shutdown RPC does.
func (p *InProcess) Stop() {
	p.grpc.Stop()
	p.srv.close()
}
