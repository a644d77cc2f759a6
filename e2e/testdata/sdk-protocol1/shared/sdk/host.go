package sdk

import (
	"context"
	"errors"
	"path"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// dialHost opens the one connection to the host's callback service. In a real
// plugin it goes through the go-plugin broker; tests dial a fake host.
type dialHost func(brokerID uint32, opts ...grpc.DialOption) (*grpc.ClientConn, error)

// hostConn is the plugin's connection to the host, dialled once at Apply and
// kept for the life of the process: go-plugin's per-call broker connection
// costs a socket and a server per call.
type hostConn struct {
	brokerID uint32
	conn     *grpc.ClientConn
	rpc      pb.HostClient
}

// hostDialOptions raise the connection's limits to the configured maximum and
// refuse an oversized request before gRPC would, with a message that says
// what was too large.
func hostDialOptions(maxBytes int) []grpc.DialOption {
	return append(wire.DialOptions(maxBytes), grpc.WithChainUnaryInterceptor(
		func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
			if m, ok := req.(proto.Message); ok {
				if err := wire.CheckSize("request "+path.Base(method), m, maxBytes); err != nil {
					return err
				}
			}
			wire.BeforeWait(ctx) // a handler's call: let the host's next call in
			return invoker(ctx, method, req, reply, cc, opts...)
		}))
}

// hostError turns a failed Host RPC into an error a plugin author can show
// as is: the host's own message without gRPC's "rpc error: code = ..."
// framing, or the context's error when the call was cancelled.
func hostError(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var tooLarge *wire.TooLargeError
	if errors.As(err, &tooLarge) {
		return err
	}
	if st, ok := status.FromError(err); ok {
		return errors.New(st.Message())
	}
	return err
}
