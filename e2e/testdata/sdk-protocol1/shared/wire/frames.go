package wire

import (
	"context"
	"errors"
	"os"
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
)

// Calls as frames: one side sends each call as a pb.CallFrame on a
// long-lived stream and the other answers it with a frame carrying the same
// id, in any order. The host calls a plugin's stage handlers this way (on
// Plugin.Calls or on a call lane), and a plugin calls the host back (Next,
// ExecuteTool, CallService) on a lane. A call on frames fails as its RPC
// would (the peer's status, DEADLINE_EXCEEDED or CANCELLED when its context
// ends, UNAVAILABLE when the stream breaks), so callers read both alike.

// FrameStream carries CallFrames both ways: the gRPC stream Plugin.Calls
// or a Lane. Send need not be safe for concurrent use: FrameClient and
// FrameServer serialise their sends.
type FrameStream interface {
	Send(*pb.CallFrame) error
	Recv() (*pb.CallFrame, error)
}

// ErrUnary says a call must go as an RPC: frames cannot carry it (a
// request too large for a frame, a stream the peer refused or that ended
// while the peer lives on).
var ErrUnary = errors.New("call goes as an RPC")

// FrameClientConfig configures a FrameClient.
type FrameClientConfig struct {
	// Service is the gRPC service whose methods the frames name
	// ("plugkit.v1.Plugin"): a traced call's span is named after it.
	Service string
	// MaxMessageBytes is the message limit: a request that does not fit
	// in a frame goes as an RPC.
	MaxMessageBytes int
	// MaxInFlight bounds the calls in flight; a call beyond it waits for a
	// slot, bounded by its context.
	MaxInFlight int
	// Open opens the stream, at the first call; stop ends it.
	Open func() (s FrameStream, stop func(), err error)
	// PeerExited says the process at the other end has exited. A stream
	// that ends while it runs gives way to RPCs; calls fail as
	// UNAVAILABLE once it is gone.
	PeerExited func() bool
	// Traced, when set, makes the RPC span of a call of a sampled trace
	// and sends its trace context in the frame's metadata
	// (TraceClientInterceptor).
	Traced grpc.UnaryClientInterceptor
}

// FrameClient sends calls as frames on one stream, opened at the first
// call, and hands each answer to its caller. It carries calls only once
// enabled (the peer said it serves frames); until then, and whenever the
// stream cannot carry a call, Invoke returns ErrUnary.
//
// On a stream whose reads can be interrupted (a Lane), the callers read
// the answers themselves: one of the callers waiting reads the stream,
// passes on the answers that are not its own, and leaves the reading to
// another waiting caller once it has its own. A lone call then reads its
// answer on its own goroutine: handing each answer from a reading
// goroutine to its caller woke a second thread per call. On a gRPC stream
// a goroutine of the client reads the answers.
type FrameClient struct {
	cfg     FrameClientConfig
	prefix  string        // "/" + Service + "/"
	slots   chan struct{} // bounds the calls in flight
	enabled atomic.Bool   // read on every call

	mu      sync.Mutex
	stream  FrameStream // nil until the first call opens it
	stop    func()
	broken  error // why the stream ended; no new call goes on it
	nextID  uint64
	pending map[uint64]chan *pb.CallFrame
	sendMu  sync.Mutex

	// When the callers read the stream (the stream is a recvDeadliner):
	direct  bool
	reading bool          // a caller reads the stream (under mu)
	free    chan struct{} // a waiting caller may take up the reading
}

// recvDeadliner is a FrameStream whose Recv a deadline interrupts without
// losing its frame (a Lane): a caller reading it can give up when its
// context ends.
type recvDeadliner interface {
	SetRecvDeadline(time.Time) error
}

// NewFrameClient returns a client that carries no call until Enable.
func NewFrameClient(cfg FrameClientConfig) *FrameClient {
	return &FrameClient{
		cfg:     cfg,
		prefix:  "/" + cfg.Service + "/",
		slots:   make(chan struct{}, max(1, cfg.MaxInFlight)),
		pending: map[uint64]chan *pb.CallFrame{},
		free:    make(chan struct{}, 1),
	}
}

// Enable lets calls go on frames: the peer serves them.
func (c *FrameClient) Enable() { c.enabled.Store(true) }

// Enabled says whether calls go on frames: enabled, and not given up for
// a stream the peer would not open.
func (c *FrameClient) Enabled() bool { return c.enabled.Load() }

// Close ends the stream; calls in flight on it fail as UNAVAILABLE.
func (c *FrameClient) Close() {
	c.mu.Lock()
	stop := c.stop
	if c.broken == nil {
		c.broken = errors.New("closed")
	}
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// register opens the stream if need be and reserves an id for a call.
func (c *FrameClient) register() (FrameStream, uint64, chan *pb.CallFrame, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.broken != nil {
		if !c.cfg.PeerExited() {
			return nil, 0, nil, ErrUnary // the stream ended, the process did not
		}
		return nil, 0, nil, c.broken
	}
	if c.stream == nil {
		s, stop, err := c.cfg.Open()
		if err != nil {
			// The peer said it serves frames and then did not: use
			// RPCs from now on.
			c.enabled.Store(false)
			return nil, 0, nil, ErrUnary
		}
		c.stream, c.stop = s, stop
		if _, c.direct = s.(recvDeadliner); !c.direct {
			go c.receive(s)
		}
	}
	c.nextID++
	ch := make(chan *pb.CallFrame, 1)
	c.pending[c.nextID] = ch
	return c.stream, c.nextID, ch, nil
}

func (c *FrameClient) forget(id uint64) {
	c.mu.Lock()
	delete(c.pending, id)
	c.mu.Unlock()
}

// receive hands each answer to its call until the stream ends, then fails
// the calls still waiting.
func (c *FrameClient) receive(s FrameStream) {
	for {
		f, err := s.Recv()
		if err != nil {
			c.ended(err)
			return
		}
		c.deliver(f)
	}
}

// deliver hands an answer to its call, if the call still waits.
func (c *FrameClient) deliver(f *pb.CallFrame) {
	c.mu.Lock()
	ch := c.pending[f.GetId()]
	delete(c.pending, f.GetId())
	c.mu.Unlock()
	if ch != nil {
		ch <- f
	}
}

// ended fails the calls waiting on a stream that has ended, and closes it.
func (c *FrameClient) ended(err error) {
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
}

// await waits for the answer to call id: on ch, or, when the callers read
// the stream, by reading it once no other caller does.
func (c *FrameClient) await(ctx context.Context, s FrameStream, id uint64, ch chan *pb.CallFrame) (*pb.CallFrame, error) {
	if !c.direct {
		select {
		case ans := <-ch:
			return ans, nil
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	for {
		c.mu.Lock()
		select {
		case ans := <-ch:
			c.mu.Unlock()
			return ans, nil
		default:
		}
		if !c.reading {
			c.reading = true
			c.mu.Unlock()
			return c.readFor(ctx, s.(recvDeadliner), s, id, ch)
		}
		c.mu.Unlock()
		select {
		case ans := <-ch:
			return ans, nil
		case <-c.free: // the reader has left: take up the reading
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

// readFor reads the stream, handing on the answers of other calls, until
// the answer to call id comes or ctx ends; then it leaves the reading to
// another waiting caller.
func (c *FrameClient) readFor(ctx context.Context, rd recvDeadliner, s FrameStream, id uint64, ch chan *pb.CallFrame) (*pb.CallFrame, error) {
	var stop func() bool
	if ctx.Done() != nil {
		// A context that ends interrupts the read; what was read of a
		// frame stays for the next reader.
		stop = context.AfterFunc(ctx, func() { _ = rd.SetRecvDeadline(time.Now()) })
	}
	defer func() {
		if stop != nil && !stop() {
			_ = rd.SetRecvDeadline(time.Time{}) // its interruption is done with
		}
		c.mu.Lock()
		c.reading = false
		waiting := len(c.pending) > 0
		c.mu.Unlock()
		if waiting {
			select {
			case c.free <- struct{}{}:
			default: // a caller is already called to read
			}
		}
	}()
	for {
		f, err := s.Recv()
		switch {
		case err == nil:
			if f.GetId() != id {
				c.deliver(f)
				continue
			}
			c.mu.Lock()
			delete(c.pending, id)
			c.mu.Unlock()
			return f, nil
		case errors.Is(err, os.ErrDeadlineExceeded):
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			// An earlier reader's interruption, come late: read on.
			_ = rd.SetRecvDeadline(time.Time{})
		default:
			c.ended(err)
			return <-ch, nil // ended answered this call too
		}
	}
}

// send sends f by deadline. A send that fails (a peer that has not read its
// stream for that long, or gone) breaks the stream: a frame may be half
// written, so nothing more can follow it, and a peer that reads nothing
// for that long is not served on it any more.
func (c *FrameClient) send(s FrameStream, f *pb.CallFrame, deadline time.Time) error {
	c.sendMu.Lock()
	defer c.sendMu.Unlock()
	if d, ok := s.(sendDeadliner); ok {
		_ = d.SetSendDeadline(deadline)
	}
	err := s.Send(f)
	if err != nil {
		c.mu.Lock()
		if c.broken == nil {
			c.broken = err
		}
		stop := c.stop
		c.mu.Unlock()
		stop() // receive then fails the calls waiting
	}
	return err
}

// sendDeadliner is a FrameStream whose sends can be bounded in time (a
// Lane); a gRPC stream's sends are bounded by its flow control and context.
type sendDeadliner interface {
	SetSendDeadline(time.Time) error
}

// maxSendWait bounds a send with no deadline of its own (a call without
// one, an answer).
const maxSendWait = 5 * time.Second

// minSendWait is the least time a send is given: a cancel frame's (its
// caller has given up already), and a call's whose deadline is nearer. Only
// a peer that has not read its stream for a while makes a send wait at all.
const minSendWait = 250 * time.Millisecond

// sendDeadline is when a send for ctx must have finished.
func sendDeadline(ctx context.Context) time.Time {
	d, ok := ctx.Deadline()
	if !ok {
		return time.Now().Add(maxSendWait)
	}
	return later(d, time.Now().Add(minSendWait))
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// Invoke runs one call of method on frames, or returns ErrUnary.
func (c *FrameClient) Invoke(ctx context.Context, method string, req, resp proto.Message) error {
	if !c.enabled.Load() {
		return ErrUnary
	}
	if c.cfg.Traced != nil && trace.SpanContextFromContext(ctx).IsSampled() {
		// The RPC's span, as the unary interceptor makes it.
		return c.cfg.Traced(ctx, c.prefix+method, req, resp, nil, func(ctx context.Context, _ string, req, resp any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
			return c.call(ctx, method, req.(proto.Message), resp.(proto.Message))
		})
	}
	return c.call(ctx, method, req, resp)
}

// call sends one call and waits for its answer.
func (c *FrameClient) call(ctx context.Context, method string, req, resp proto.Message) error {
	raw, err := proto.Marshal(req)
	if err != nil || len(raw) > c.cfg.MaxMessageBytes-CallFrameOverhead {
		return ErrUnary // the RPC fails as it should, or fits where a frame would not
	}
	select {
	case c.slots <- struct{}{}:
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
	defer func() { <-c.slots }()
	BeforeWait(ctx)
	s, id, ch, err := c.register()
	if err != nil {
		if errors.Is(err, ErrUnary) {
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
	if err := c.send(s, f, sendDeadline(ctx)); err != nil {
		c.forget(id)
		return status.Error(codes.Unavailable, "call stream closed: "+err.Error())
	}
	ans, err := c.await(ctx, s, id, ch)
	if err != nil {
		c.forget(id)
		_ = c.send(s, &pb.CallFrame{Id: id, Cancel: true}, time.Now().Add(minSendWait))
		return status.FromContextError(err).Err()
	}
	if code := codes.Code(ans.GetCode()); code != codes.OK {
		return status.Error(code, ans.GetMessage())
	}
	if err := proto.Unmarshal(ans.GetResponse(), resp); err != nil {
		return status.Errorf(codes.Internal, "decode the answer to %s: %v", method, err)
	}
	return nil
}

// Call runs one call of method on c, or as the RPC rpc when frames cannot
// carry it.
func Call[Resp any, PResp interface {
	*Resp
	proto.Message
}](ctx context.Context, c *FrameClient, method string, req proto.Message, rpc func(context.Context) (PResp, error)) (PResp, error) {
	resp := PResp(new(Resp))
	err := c.Invoke(ctx, method, req, resp)
	if errors.Is(err, ErrUnary) {
		BeforeWait(ctx)
		return rpc(ctx)
	}
	if err != nil {
		return nil, err
	}
	return resp, nil
}
