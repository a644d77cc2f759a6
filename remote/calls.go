package remote

import (
	"context"
	"net"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// calls sends the stage handlers' calls into one plugin process as frames
// (wire.FrameClient) when the plugin serves them, and as one unary RPC
// each otherwise. Frames go on the plugin's call lane when it serves one
// (a socket pair it inherited: a write and a read a side per call), else
// on its call stream (Plugin.Calls, one long-lived gRPC stream), which
// saves each call an HTTP/2 stream of its own, its headers and the
// goroutines gRPC runs for it. A call still goes as an RPC when frames
// cannot carry it (wire.ErrUnary).
type calls struct {
	unary  pb.PluginClient
	frames *wire.FrameClient
	lane   net.Conn // the call lane, when the plugin serves it; set before frames is enabled
}

// maxStreamCalls is how many calls may be in flight on one plugin's frames;
// a call beyond it waits for a slot (bounded by its context).
const maxStreamCalls = 256

func newCalls(in *instance) *calls {
	c := &calls{unary: in.client}
	cfg := wire.FrameClientConfig{
		Service:         "plugkit.v1.Plugin",
		MaxMessageBytes: in.maxMessage,
		MaxInFlight:     maxStreamCalls,
		PeerExited:      in.exited,
		Open: func() (wire.FrameStream, func(), error) {
			if c.lane != nil {
				lane := c.lane
				return wire.NewLane(lane, in.maxMessage), func() { _ = lane.Close() }, nil
			}
			ctx, cancel := in.untilExit(context.Background())
			s, err := in.client.Calls(ctx)
			if err != nil {
				cancel()
				return nil, nil, err
			}
			return s, cancel, nil
		},
	}
	if in.tracerProvider != nil {
		cfg.Traced = wire.TraceClientInterceptor(in.tracerProvider)
	}
	c.frames = wire.NewFrameClient(cfg)
	return c
}

// enable lets calls go as frames, on lane when it is not nil.
func (c *calls) enable(lane net.Conn) {
	c.lane = lane
	c.frames.Enable()
}

// transport names how calls go: "lanes", "stream" or "rpc" (see
// Status.Calls).
func (c *calls) transport() string {
	switch {
	case !c.frames.Enabled():
		return "rpc"
	case c.lane != nil:
		return "lanes"
	}
	return "stream"
}

// close ends the frames' stream; calls in flight on it fail as UNAVAILABLE.
func (c *calls) close() { c.frames.Close() }

func (c *calls) ExecuteTool(ctx context.Context, req *pb.ExecuteToolRequest) (*pb.ExecuteToolResponse, error) {
	return wire.Call(ctx, c.frames, "ExecuteTool", req, func(ctx context.Context) (*pb.ExecuteToolResponse, error) { return c.unary.ExecuteTool(ctx, req) })
}

func (c *calls) PreExecute(ctx context.Context, req *pb.PreExecuteRequest) (*pb.PreExecuteResponse, error) {
	return wire.Call(ctx, c.frames, "PreExecute", req, func(ctx context.Context) (*pb.PreExecuteResponse, error) { return c.unary.PreExecute(ctx, req) })
}

// startGuard sends a Guard call and returns what waits for its answer
// (wire.Start): a call's remote guards go out at once.
func (c *calls) startGuard(ctx context.Context, req *pb.GuardRequest) func() (*pb.GuardResponse, error) {
	return wire.Start(ctx, c.frames, "Guard", req, func(ctx context.Context) (*pb.GuardResponse, error) { return c.unary.Guard(ctx, req) })
}

func (c *calls) WrapExecute(ctx context.Context, req *pb.WrapExecuteRequest) (*pb.WrapExecuteResponse, error) {
	return wire.Call(ctx, c.frames, "WrapExecute", req, func(ctx context.Context) (*pb.WrapExecuteResponse, error) { return c.unary.WrapExecute(ctx, req) })
}

func (c *calls) PostExecute(ctx context.Context, req *pb.PostExecuteRequest) (*pb.PostExecuteResponse, error) {
	return wire.Call(ctx, c.frames, "PostExecute", req, func(ctx context.Context) (*pb.PostExecuteResponse, error) { return c.unary.PostExecute(ctx, req) })
}

func (c *calls) Approve(ctx context.Context, req *pb.ApproveRequest) (*pb.ApproveResponse, error) {
	return wire.Call(ctx, c.frames, "Approve", req, func(ctx context.Context) (*pb.ApproveResponse, error) { return c.unary.Approve(ctx, req) })
}

func (c *calls) CallService(ctx context.Context, req *pb.CallServiceRequest) (*pb.CallServiceResponse, error) {
	return wire.Call(ctx, c.frames, "CallService", req, func(ctx context.Context) (*pb.CallServiceResponse, error) { return c.unary.CallService(ctx, req) })
}

// callbacks answers the plugin's calls back into the host that come on its
// callback lane (Next, ExecuteTool, CallService of the Host service), with
// the Host service of the plugin's current version; the other Host RPCs
// (registrations, spans, problems) are not per call and stay RPCs.
func (in *instance) callbacks(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
	h := in.host.Load()
	if h == nil {
		return nil, status.Error(codes.FailedPrecondition, "the plugin is not applied yet")
	}
	var icpt grpc.UnaryServerInterceptor
	if in.tracerProvider != nil {
		icpt = in.traceCallbacks
	}
	const svc = "plugkit.v1.Host"
	switch f.GetMethod() {
	case "Next":
		return wire.HandleFrame(ctx, f, svc, h.Next, icpt)
	case "ExecuteTool":
		return wire.HandleFrame(ctx, f, svc, h.ExecuteTool, icpt)
	case "CallService":
		return wire.HandleFrame(ctx, f, svc, h.CallService, icpt)
	}
	return nil, wire.UnknownFrameMethod(f.GetMethod())
}
