package sdk

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Calls serves the stage handlers on the host's call stream (pb.CallFrame):
// each call runs through the same handler code as its RPC (see
// wire.FrameServer).
func (s *server) Calls(stream pb.Plugin_CallsServer) error {
	s.frameServer().Serve(stream.Context(), stream)
	return nil // the host closed the stream, or the connection ended
}

// frameServer answers the host's calls as frames, on the call stream or
// on a call lane. A panic outside the handlers' own containment fails the
// call as INTERNAL, as the RPC's recovery interceptor does.
func (s *server) frameServer() *wire.FrameServer {
	return &wire.FrameServer{
		Handle:          s.handleFrame,
		Panic:           func(method string, r any) error { return panicError(s.log, method, r) },
		MaxMessageBytes: s.maxBytes,
		Log:             s.log,
	}
}

// handleFrame runs one call of the Plugin service's stage handlers.
func (s *server) handleFrame(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
	icpt := s.tracing.callInterceptor()
	const svc = "plugkit.v1.Plugin"
	switch f.GetMethod() {
	case "ExecuteTool":
		return wire.HandleFrame(ctx, f, svc, s.ExecuteTool, icpt)
	case "PreExecute":
		return wire.HandleFrame(ctx, f, svc, s.PreExecute, icpt)
	case "Guard":
		return wire.HandleFrame(ctx, f, svc, s.Guard, icpt)
	case "WrapExecute":
		return wire.HandleFrame(ctx, f, svc, s.WrapExecute, icpt)
	case "PostExecute":
		return wire.HandleFrame(ctx, f, svc, s.PostExecute, icpt)
	case "Approve":
		return wire.HandleFrame(ctx, f, svc, s.Approve, icpt)
	case "CallService":
		return wire.HandleFrame(ctx, f, svc, s.CallService, icpt)
	}
	return nil, wire.UnknownFrameMethod(f.GetMethod())
}

// maxCallbacks bounds the calls back to the host in flight on the callback
// lane; more wait for a slot.
const maxCallbacks = 256

// serveLanes serves the host's calls on the call lane and sends the calls
// back to the host on the callback lane (wire.EnvCallLanes); Describe then
// tells the host the plugin serves them. The lanes end with the host (or
// when it closes them): the calls then running are cancelled.
func (s *server) serveLanes(calls, callbacks net.Conn) {
	s.callbacks = wire.NewFrameClient(wire.FrameClientConfig{
		Service:         "plugkit.v1.Host",
		MaxMessageBytes: s.maxBytes,
		MaxInFlight:     maxCallbacks,
		Open: func() (wire.FrameStream, func(), error) {
			return wire.NewLane(callbacks, s.maxBytes), func() { _ = callbacks.Close() }, nil
		},
		// A lane that ends while the host lives gives way to RPCs; once
		// the host is gone, they fail as this process's calls do.
		PeerExited: func() bool { return false },
		Traced:     s.tracing.clientInterceptor(),
	})
	s.callbacks.Enable()
	go s.frameServer().Serve(context.Background(), wire.NewLane(calls, s.maxBytes))
}

// hostRPC is the Host client the plugin calls the host with: rpc, with the
// per-call methods on the callback lane when the plugin has one.
func (s *server) hostRPC(rpc pb.HostClient) pb.HostClient {
	if s.callbacks == nil {
		return rpc
	}
	return laneHost{HostClient: rpc, frames: s.callbacks}
}

// laneHost sends Next, ExecuteTool and CallService as frames on the
// callback lane, and as RPCs when the lane cannot carry one (a request
// too large for a frame: the RPC then refuses it with the size error).
type laneHost struct {
	pb.HostClient
	frames *wire.FrameClient
}

func (h laneHost) Next(ctx context.Context, req *pb.NextRequest, opts ...grpc.CallOption) (*pb.NextResponse, error) {
	return wire.Call(ctx, h.frames, "Next", req, func(ctx context.Context) (*pb.NextResponse, error) { return h.HostClient.Next(ctx, req, opts...) })
}

func (h laneHost) ExecuteTool(ctx context.Context, req *pb.HostExecuteToolRequest, opts ...grpc.CallOption) (*pb.HostExecuteToolResponse, error) {
	return wire.Call(ctx, h.frames, "ExecuteTool", req, func(ctx context.Context) (*pb.HostExecuteToolResponse, error) {
		return h.HostClient.ExecuteTool(ctx, req, opts...)
	})
}

func (h laneHost) CallService(ctx context.Context, req *pb.HostCallServiceRequest, opts ...grpc.CallOption) (*pb.HostCallServiceResponse, error) {
	return wire.Call(ctx, h.frames, "CallService", req, func(ctx context.Context) (*pb.HostCallServiceResponse, error) {
		return h.HostClient.CallService(ctx, req, opts...)
	})
}
