package wire

import (
	"context"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// FrameServer answers the calls that arrive as frames (see FrameClient).
type FrameServer struct {
	// Handle runs one call: f names the method and carries its request
	// (decode it with HandleFrame). A panic is contained by Panic.
	Handle func(ctx context.Context, f *pb.CallFrame) (proto.Message, error)
	// Panic describes a panic of Handle (and may log it); the call fails
	// as INTERNAL with that message, or with the panic's value when nil.
	Panic func(method string, r any) error
	// MaxMessageBytes is the message limit: an answer that does not fit
	// in a frame fails its call as RESOURCE_EXHAUSTED, not the stream.
	MaxMessageBytes int
	// Log, when set, hears of answers that could not be sent.
	Log hclog.Logger
	// MaxInFlight, when positive, bounds the calls running: past it Serve
	// reads no more frames until one ends, which holds the peer back.
	MaxInFlight int
}

// Serve answers the calls on s until s ends or ctx is done. Each call runs
// on a goroutine of its own (a reused worker), under its deadline, its
// metadata and a context a cancel frame cancels; its answer goes back when
// it is ready, in any order. When the stream ends, the calls still running
// are cancelled, and Serve returns once they have.
func (fs *FrameServer) Serve(ctx context.Context, s FrameStream) {
	var (
		sendMu  sync.Mutex
		mu      sync.Mutex
		cancels = map[uint64]context.CancelFunc{}
		running sync.WaitGroup
		pool    = newWorkers()
		slots   chan struct{}
	)
	if fs.MaxInFlight > 0 {
		slots = make(chan struct{}, fs.MaxInFlight)
	}
	defer pool.stop()
	defer running.Wait()
	defer func() {
		mu.Lock()
		for _, cancel := range cancels {
			cancel()
		}
		mu.Unlock()
	}()
	for {
		f, err := s.Recv()
		if err != nil {
			return // the peer closed the stream, or the connection ended
		}
		if f.GetCancel() {
			mu.Lock()
			if cancel := cancels[f.GetId()]; cancel != nil {
				cancel()
			}
			mu.Unlock()
			continue
		}
		if slots != nil {
			slots <- struct{}{}
		}
		cctx, cancel := frameContext(ctx, f)
		mu.Lock()
		cancels[f.GetId()] = cancel
		mu.Unlock()
		running.Add(1)
		pool.do(func() {
			defer running.Done()
			if slots != nil {
				defer func() { <-slots }()
			}
			ans := fs.answer(cctx, f)
			mu.Lock()
			delete(cancels, f.GetId())
			mu.Unlock()
			cancel()
			sendMu.Lock()
			defer sendMu.Unlock()
			if d, ok := s.(sendDeadliner); ok {
				_ = d.SetSendDeadline(time.Now().Add(maxSendWait))
			}
			if err := s.Send(ans); err != nil {
				if fs.Log != nil {
					fs.Log.Debug("call stream: answer not sent", "method", f.GetMethod(), "error", err)
				}
				// A peer that does not read its answers (or is gone): a
				// frame may be half written, so the lane is done.
				if c, ok := s.(io.Closer); ok {
					_ = c.Close()
				}
			}
		})
	}
}

// workers run the calls of one Serve. A worker that has finished a call
// waits for the next one rather than exiting: a goroutine per call would
// grow a fresh stack for each (the handlers' decoding goes deep), which
// cost about a sixth of a plugin's time per call. At most maxIdleWorkers
// wait; the rest exit.
type workers struct {
	calls chan func() // unbuffered: a send succeeds only to a waiting worker
	idle  atomic.Int32
	quit  chan struct{}
}

const maxIdleWorkers = 16

func newWorkers() *workers {
	return &workers{calls: make(chan func()), quit: make(chan struct{})}
}

// do runs fn on a waiting worker, or on a new one.
func (w *workers) do(fn func()) {
	select {
	case w.calls <- fn:
	default:
		go w.work(fn)
	}
}

func (w *workers) work(fn func()) {
	for {
		fn()
		if w.idle.Add(1) > maxIdleWorkers {
			w.idle.Add(-1)
			return
		}
		select {
		case fn = <-w.calls:
			w.idle.Add(-1)
		case <-w.quit:
			return
		}
	}
}

// stop ends the waiting workers; call it once no call is running.
func (w *workers) stop() { close(w.quit) }

// frameContext is a call's context: ctx with the call's deadline and
// metadata.
func frameContext(ctx context.Context, f *pb.CallFrame) (context.Context, context.CancelFunc) {
	if md := f.GetMetadata(); len(md) > 0 {
		ctx = metadata.NewIncomingContext(ctx, metadata.New(md))
	}
	if d := f.GetDeadlineUnixNano(); d != 0 {
		return context.WithDeadline(ctx, time.Unix(0, d))
	}
	return context.WithCancel(ctx)
}

// answer runs one call and makes its answer frame.
func (fs *FrameServer) answer(ctx context.Context, f *pb.CallFrame) (ans *pb.CallFrame) {
	ans = &pb.CallFrame{Id: f.GetId()}
	defer func() {
		if r := recover(); r != nil {
			msg := fmt.Sprintf("panic in %s: %v", f.GetMethod(), r)
			if fs.Panic != nil {
				msg = fs.Panic(f.GetMethod(), r).Error()
			}
			ans.Response, ans.Code, ans.Message = nil, int32(codes.Internal), msg
		}
	}()
	resp, err := fs.Handle(ctx, f)
	if err == nil {
		ans.Response, err = proto.Marshal(resp)
		if n := len(ans.Response); err == nil && n+CallFrameOverhead > fs.MaxMessageBytes {
			ans.Response = nil
			err = status.Errorf(codes.ResourceExhausted, "answer to %s is %d bytes, over the %d-byte message limit", f.GetMethod(), n, fs.MaxMessageBytes)
		}
	}
	if err != nil {
		st := status.Convert(err)
		ans.Code, ans.Message = int32(st.Code()), st.Message()
	}
	return ans
}

// HandleFrame decodes f's request for fn and calls it, through icpt when
// set (the server span its RPC would get, named after service's method:
// "plugkit.v1.Plugin").
func HandleFrame[Req any, PReq interface {
	*Req
	proto.Message
}, Resp proto.Message](ctx context.Context, f *pb.CallFrame, service string, fn func(context.Context, PReq) (Resp, error), icpt grpc.UnaryServerInterceptor) (proto.Message, error) {
	req := PReq(new(Req))
	if err := proto.Unmarshal(f.GetRequest(), req); err != nil {
		return nil, status.Errorf(codes.InvalidArgument, "decode the %s request: %v", f.GetMethod(), err)
	}
	if icpt == nil {
		return fn(ctx, req)
	}
	resp, err := icpt(ctx, req, &grpc.UnaryServerInfo{FullMethod: "/" + service + "/" + f.GetMethod()}, func(ctx context.Context, r any) (any, error) {
		return fn(ctx, r.(PReq))
	})
	if err != nil {
		return nil, err
	}
	return resp.(proto.Message), nil
}

// UnknownFrameMethod is the error of a frame naming a method its server
// does not carry.
func UnknownFrameMethod(method string) error {
	return status.Error(codes.Unimplemented, fmt.Sprintf("no method %q on the call stream", method))
}
