package sdk

import (
	"context"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Calls serves the stage handlers on the host's call stream (pb.CallFrame):
// each call runs on a goroutine of its own, under its deadline and a
// context the host cancels with a cancel frame, through the same handler
// code as its RPC; its answer goes back when it is ready. When the stream
// ends, the calls still running are cancelled and waited for.
func (s *server) Calls(stream pb.Plugin_CallsServer) error {
	ctx := stream.Context()
	var (
		sendMu  sync.Mutex
		mu      sync.Mutex
		cancels = map[uint64]context.CancelFunc{}
		running sync.WaitGroup
	)
	defer running.Wait()
	defer func() {
		mu.Lock()
		for _, cancel := range cancels {
			cancel()
		}
		mu.Unlock()
	}()
	for {
		f, err := stream.Recv()
		if err != nil {
			return nil // the host closed the stream, or the connection ended
		}
		if f.GetCancel() {
			mu.Lock()
			if cancel := cancels[f.GetId()]; cancel != nil {
				cancel()
			}
			mu.Unlock()
			continue
		}
		cctx, cancel := frameContext(ctx, f)
		mu.Lock()
		cancels[f.GetId()] = cancel
		mu.Unlock()
		running.Add(1)
		go func() {
			defer running.Done()
			ans := s.answer(cctx, f)
			mu.Lock()
			delete(cancels, f.GetId())
			mu.Unlock()
			cancel()
			sendMu.Lock()
			defer sendMu.Unlock()
			if err := stream.Send(ans); err != nil {
				s.log.Debug("call stream: answer not sent", "method", f.GetMethod(), "error", err)
			}
		}()
	}
}

// frameContext is a call's context: the stream's, with the call's deadline
// and metadata.
func frameContext(ctx context.Context, f *pb.CallFrame) (context.Context, context.CancelFunc) {
	if md := f.GetMetadata(); len(md) > 0 {
		ctx = metadata.NewIncomingContext(ctx, metadata.New(md))
	}
	if d := f.GetDeadlineUnixNano(); d != 0 {
		return context.WithDeadline(ctx, time.Unix(0, d))
	}
	return context.WithCancel(ctx)
}

// answer runs one call and makes its answer frame. A panic outside the
// handlers' own containment fails the call as INTERNAL, as the RPC's
// recovery interceptor does.
func (s *server) answer(ctx context.Context, f *pb.CallFrame) (ans *pb.CallFrame) {
	ans = &pb.CallFrame{Id: f.GetId()}
	defer func() {
		if r := recover(); r != nil {
			ans.Response, ans.Code, ans.Message = nil, int32(codes.Internal), panicError(s.log, f.GetMethod(), r).Error()
		}
	}()
	var (
		resp proto.Message
		err  error
	)
	switch f.GetMethod() {
	case "ExecuteTool":
		resp, err = handle(ctx, f, s.ExecuteTool, s.tracing.callInterceptor())
	case "PreExecute":
		resp, err = handle(ctx, f, s.PreExecute, s.tracing.callInterceptor())
	case "Guard":
		resp, err = handle(ctx, f, s.Guard, s.tracing.callInterceptor())
	case "WrapExecute":
		resp, err = handle(ctx, f, s.WrapExecute, s.tracing.callInterceptor())
	case "PostExecute":
		resp, err = handle(ctx, f, s.PostExecute, s.tracing.callInterceptor())
	case "Approve":
		resp, err = handle(ctx, f, s.Approve, s.tracing.callInterceptor())
	case "CallService":
		resp, err = handle(ctx, f, s.CallService, s.tracing.callInterceptor())
	default:
		err = status.Errorf(codes.Unimplemented, "no method %q on the call stream", f.GetMethod())
	}
	if err == nil {
		ans.Response, err = proto.Marshal(resp)
		if n := len(ans.Response); err == nil && n+wire.CallFrameOverhead > s.maxBytes {
			ans.Response = nil
			err = status.Errorf(codes.ResourceExhausted, "answer to %s is %d bytes, over the %d-byte message limit", f.GetMethod(), n, s.maxBytes)
		}
	}
	if err != nil {
		st := status.Convert(err)
		ans.Code, ans.Message = int32(st.Code()), st.Message()
	}
	return ans
}

// handle decodes f's request for fn and calls it, through icpt when the
// host traces (the server span its RPC would get).
func handle[Req any, PReq interface {
	*Req
	proto.Message
}, Resp proto.Message](ctx context.Context, f *pb.CallFrame, fn func(context.Context, PReq) (Resp, error), icpt grpc.UnaryServerInterceptor) (proto.Message, error) {
	req := PReq(new(Req))
	if err := proto.Unmarshal(f.GetRequest(), req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decode the %s request: %v", f.GetMethod(), err)
	}
	if icpt == nil {
		return fn(ctx, req)
	}
	resp, err := icpt(ctx, req, &grpc.UnaryServerInfo{FullMethod: "/plugkit.v1.Plugin/" + f.GetMethod()}, func(ctx context.Context, r any) (any, error) {
		return fn(ctx, r.(PReq))
	})
	if err != nil {
		return nil, err
	}
	return resp.(proto.Message), nil
}
