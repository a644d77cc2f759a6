package remote

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// calls sends the stage handlers' calls into one plugin process: on the
// plugin's call stream (Plugin.Calls, one long-lived bidirectional stream,
// each call a frame out and a frame back) when the plugin serves it, and as
// one unary RPC each otherwise. The stream saves each call an HTTP/2
// stream of its own, its headers and the goroutines gRPC runs for it.
//
// A call of a traced trace gets the RPC span the unary interceptor would
// make, its trace context in the frame's metadata. A call still goes as an
// RPC when the stream cannot carry it: a request too large for a frame, a
// stream the plugin refused or that ended while the process lives on. A call on the stream fails as its RPC would: the plugin's
// status, DEADLINE_EXCEEDED or CANCELLED when ctx ends (the plugin is told
// with a cancel frame), UNAVAILABLE when the stream breaks (the process
// died), so the proxies read both alike.
type calls struct {
	unary   pb.PluginClient
	limit   int           // the message limit, which a frame must fit in
	slots   chan struct{} // bounds the calls in flight on the stream
	streams atomic.Bool   // the plugin serves Plugin.Calls (read on every call)

	mu     sync.Mutex
	stream pb.Plugin_CallsClient // nil until the first call opens it
	open   func() (pb.Plugin_CallsClient, context.CancelFunc, error)
	exited func() bool
	// traced makes the RPC span of a traced call and passes its trace
	// context in the frame's metadata; nil when the host does not trace.
	traced  grpc.UnaryClientInterceptor
	stop    context.CancelFunc
	broken  error // why the stream ended; no new call goes on it
	nextID  uint64
	pending map[uint64]chan *pb.CallFrame
	sendMu  sync.Mutex
}

// maxStreamCalls is how many calls may be in flight on one plugin's stream;
// a call beyond it waits for a slot (bounded by its context).
const maxStreamCalls = 256

// errUnary says a call must go as an RPC.
var errUnary = errors.New("call goes as an RPC")

func newCalls(in *instance) *calls {
	c := &calls{unary: in.client, limit: in.maxMessage, slots: make(chan struct{}, maxStreamCalls), pending: map[uint64]chan *pb.CallFrame{}, exited: in.exited}
	if in.tracerProvider != nil {
		c.traced = wire.TraceClientInterceptor(in.tracerProvider)
	}
	c.open = func() (pb.Plugin_CallsClient, context.CancelFunc, error) {
		ctx, cancel := in.untilExit(context.Background())
		s, err := in.client.Calls(ctx)
		if err != nil {
			cancel()
			return nil, nil, err
		}
		return s, cancel, nil
	}
	return c
}

// enable lets calls go on the stream: the plugin said it serves it.
func (c *calls) enable() { c.streams.Store(true) }

// close ends the stream; calls in flight on it fail as UNAVAILABLE.
func (c *calls) close() {
	c.mu.Lock()
	stop := c.stop
	if c.broken == nil {
		c.broken = errors.New("plugin stopped")
	}
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// register opens the stream if need be and reserves an id for a call.
func (c *calls) register() (pb.Plugin_CallsClient, uint64, chan *pb.CallFrame, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		if !c.exited() {
			return nil, 0, nil, errUnary // the stream ended, the process did not
		}
		return nil, 0, nil, c.broken
	}
	if c.stream == nil {
		s, stop, err := c.open()
		if err != nil {
			// The plugin said it serves the stream and then did not:
			// use RPCs from now on.
			c.streams.Store(false)
			return nil, 0, nil, errUnary
		}
		c.stream, c.stop = s, stop
		go c.receive(s)
	}
	c.nextID++
	ch := make(chan *pb.CallFrame, 1)
	c.pending[c.nextID] = ch
	return c.stream, c.nextID, ch, nil
}

func (c *calls) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// receive hands each answer to its call until the stream ends, then fails
// the calls still waiting.
func (c *calls) receive(s pb.Plugin_CallsClient) {
	for {
		f, err := s.Recv()
		if err != nil {
			c.mu.Lock()
			if c.broken == nil {
				c.broken = err
			}
			for id, ch := range c.pending {
				ch <- &pb.CallFrame{Id: id, Code: int32(codes.Unavailable), Message: "call stream closed: " + c.broken.Error()}
				delete(c.pending, id)
			}
			stop := c.stop
			c.mu.Unlock()
			stop()
			return
		}
		c.mu.Lock()
		ch := c.pending[f.GetId()]
		delete(c.pending, f.GetId())
		c.mu.Unlock()
		if ch != nil {
			ch <- f
		}
	}
}

func (c *calls) send(s pb.Plugin_CallsClient, f *pb.CallFrame) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	return s.Send(f)
}

// invoke runs one call on the stream, or returns errUnary.
func (c *calls) invoke(ctx context.Context, method string, req, resp proto.Message) error {
	if !c.streams.Load() {
		return errUnary
	}
	if c.traced != nil && trace.SpanContextFromContext(ctx).IsSampled() {
		// The RPC's span, as the unary interceptor makes it.
		return c.traced(ctx, "/plugkit.v1.Plugin/"+method, req, resp, nil, func(ctx context.Context, _ string, req, resp any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			return c.send1(ctx, method, req.(proto.Message), resp.(proto.Message))
		})
	}
	return c.send1(ctx, method, req, resp)
}

// send1 sends one call on the stream and waits for its answer.
func (c *calls) send1(ctx context.Context, method string, req, resp proto.Message) error {
	raw, err := proto.Marshal(req)
	if err != nil || len(raw) > c.limit-wire.CallFrameOverhead {
		return errUnary // the RPC fails as it should, or fits where a frame would not
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
	defer func() { <-c.slots }()
	s, id, ch, err := c.register()
	if err != nil {
		if errors.Is(err, errUnary) {
			return err
		}
		return status.Error(codes.Unavailable, "call stream closed: "+err.Error())
	}
	f := &pb.CallFrame{Id: id, Method: method, Request: raw}
	if md, ok := metadata.FromOutgoingContext(ctx); ok {
		f.Metadata = make(map[string]string, len(md))
		for k, v := range md {
			if len(v) > 0 {
				f.Metadata[k] = v[0]
			}
		}
	}
	if d, ok := ctx.Deadline(); ok {
		f.DeadlineUnixNano = d.UnixNano()
		if !time.Now().Before(d) {
			c.forget(id)
			return status.Error(codes.DeadlineExceeded, context.DeadlineExceeded.Error())
		}
	}
	if err := c.send(s, f); err != nil {
		c.forget(id)
		return status.Error(codes.Unavailable, "call stream closed: "+err.Error())
	}
	select {
	case ans := <-ch:
		if code := codes.Code(ans.GetCode()); code != codes.OK {
			return status.Error(code, ans.GetMessage())
		}
		if err := proto.Unmarshal(ans.GetResponse(), resp); err != nil {
			return status.Errorf(codes.Internal, "decode the answer to %s: %v", method, err)
		}
		return nil
	case <-ctx.Done():
		c.forget(id)
		_ = c.send(s, &pb.CallFrame{Id: id, Cancel: true})
		return status.FromContextError(ctx.Err()).Err()
	}
}

// call is invoke with the RPC as the fallback.
func call[Resp any, PResp interface {
	*Resp
	proto.Message
}](ctx context.Context, c *calls, method string, req proto.Message, rpc func(context.Context) (PResp, error)) (PResp, error) {
	resp := PResp(new(Resp))
	err := c.invoke(ctx, method, req, resp)
	if errors.Is(err, errUnary) {
		return rpc(ctx)
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}

func (c *calls) ExecuteTool(ctx context.Context, req *pb.ExecuteToolRequest) (*pb.ExecuteToolResponse, error) {
	return call(ctx, c, "ExecuteTool", req, func(ctx context.Context) (*pb.ExecuteToolResponse, error) { return c.unary.ExecuteTool(ctx, req) })
}

func (c *calls) PreExecute(ctx context.Context, req *pb.PreExecuteRequest) (*pb.PreExecuteResponse, error) {
	return call(ctx, c, "PreExecute", req, func(ctx context.Context) (*pb.PreExecuteResponse, error) { return c.unary.PreExecute(ctx, req) })
}

func (c *calls) Guard(ctx context.Context, req *pb.GuardRequest) (*pb.GuardResponse, error) {
	return call(ctx, c, "Guard", req, func(ctx context.Context) (*pb.GuardResponse, error) { return c.unary.Guard(ctx, req) })
}

func (c *calls) WrapExecute(ctx context.Context, req *pb.WrapExecuteRequest) (*pb.WrapExecuteResponse, error) {
	return call(ctx, c, "WrapExecute", req, func(ctx context.Context) (*pb.WrapExecuteResponse, error) { return c.unary.WrapExecute(ctx, req) })
}

func (c *calls) PostExecute(ctx context.Context, req *pb.PostExecuteRequest) (*pb.PostExecuteResponse, error) {
	return call(ctx, c, "PostExecute", req, func(ctx context.Context) (*pb.PostExecuteResponse, error) { return c.unary.PostExecute(ctx, req) })
}

func (c *calls) Approve(ctx context.Context, req *pb.ApproveRequest) (*pb.ApproveResponse, error) {
	return call(ctx, c, "Approve", req, func(ctx context.Context) (*pb.ApproveResponse, error) { return c.unary.Approve(ctx, req) })
}

func (c *calls) CallService(ctx context.Context, req *pb.CallServiceRequest) (*pb.CallServiceResponse, error) {
	return call(ctx, c, "CallService", req, func(ctx context.Context) (*pb.CallServiceResponse, error) { return c.unary.CallService(ctx, req) })
}
