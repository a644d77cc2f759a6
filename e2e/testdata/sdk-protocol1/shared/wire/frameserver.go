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

	watchTick time.Duration // watchTick unless set (by tests)
}

// Serve answers the calls on s until s ends or ctx is done. A call runs
// under its deadline, its metadata and a context a cancel frame cancels;
// its answer goes back when it is ready, in any order. When the stream
// ends, the calls still running are cancelled, and Serve returns once
// they have.
//
// A call runs on the goroutine that read it: handing each call to another
// goroutine woke a second thread per call, as much time as the call's own
// system calls. While a call runs there, another goroutine takes over
// reading the stream as soon as the call is about to wait for something
// (BeforeWait: the call sends a call of its own), or once it has run for
// a tick or two of the server's watch, so that a slow or blocked call
// holds neither the calls behind it nor their cancel frames for long.
func (fs *FrameServer) Serve(ctx context.Context, s FrameStream) {
	sv := &serving{
		fs: fs, s: s, ctx: ctx,
		cancels: map[uint64]context.CancelFunc{},
		pool:    newWorkers(),
		ended:   make(chan struct{}),
		wake:    make(chan struct{}, 1),
	}
	if fs.MaxInFlight > 0 {
		sv.slots = make(chan struct{}, fs.MaxInFlight)
	}
	defer sv.pool.stop()
	defer sv.running.Wait()
	sv.running.Add(1)
	go func() {
		defer sv.running.Done()
		sv.watch()
	}()
	sv.read()
	<-sv.ended // another goroutine may have taken over the reading
}

// serving is one Serve's state.
type serving struct {
	fs      *FrameServer
	s       FrameStream
	ctx     context.Context
	sendMu  sync.Mutex
	running sync.WaitGroup // the calls, the readers handed over to, the watch
	pool    *workers
	slots   chan struct{} // nil when unbounded
	ended   chan struct{} // closed when the stream has ended
	endOnce sync.Once

	mu      sync.Mutex
	cancels map[uint64]context.CancelFunc
	reading *inlineCall // the call the reading goroutine runs, if any

	calls    atomic.Uint64 // calls started, for the watch
	watching atomic.Bool   // the watch is awake (else it waits on wake)
	wake     chan struct{}
}

// inlineCall is a call running on the goroutine that read it; its context
// finds it (BeforeWait).
type inlineCall struct {
	context.Context
	sv       *serving
	handedOn bool // another goroutine reads the stream now (under sv.mu)
}

type inlineKey struct{}

func (c *inlineCall) Value(key any) any {
	if key == (inlineKey{}) {
		return c
	}
	return c.Context.Value(key)
}

// BeforeWait says that the call whose context is ctx is about to wait (for
// a call of its own, say): if it runs on the goroutine that reads its
// server's stream, another goroutine takes over the reading first, so the
// calls behind it, and its own cancel frame, are not held up. Outside a
// frame server's call it does nothing.
func BeforeWait(ctx context.Context) {
	if c, ok := ctx.Value(inlineKey{}).(*inlineCall); ok {
		c.sv.handOn(c)
	}
}

// read reads and runs calls until the stream ends, or until the call it
// runs hands the reading on to another goroutine.
func (sv *serving) read() {
	for {
		f, err := sv.s.Recv()
		if err != nil {
			sv.end()
			return // the peer closed the stream, or the connection ended
		}
		if f.GetCancel() {
			sv.mu.Lock()
			if cancel := sv.cancels[f.GetId()]; cancel != nil {
				cancel()
			}
			sv.mu.Unlock()
			continue
		}
		if sv.slots != nil {
			sv.slots <- struct{}{}
		}
		cctx, cancel := frameContext(sv.ctx, f)
		c := &inlineCall{Context: cctx, sv: sv}
		sv.mu.Lock()
		sv.cancels[f.GetId()] = cancel
		sv.reading = c
		sv.mu.Unlock()
		sv.calls.Add(1)
		if !sv.watching.Load() && sv.watching.CompareAndSwap(false, true) {
			sv.wake <- struct{}{}
		}
		sv.run(c, cancel, f)
		sv.mu.Lock()
		handedOn := c.handedOn
		if !handedOn {
			sv.reading = nil
		}
		sv.mu.Unlock()
		if handedOn {
			return
		}
	}
}

// end marks the stream ended and cancels the calls still running.
func (sv *serving) end() {
	sv.endOnce.Do(func() { close(sv.ended) })
	sv.mu.Lock()
	for _, cancel := range sv.cancels {
		cancel()
	}
	sv.mu.Unlock()
}

// handOn starts another goroutine reading the stream, if c is still the
// call of the one that reads it.
func (sv *serving) handOn(c *inlineCall) {
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.reading != c || c.handedOn {
		return
	}
	c.handedOn, sv.reading = true, nil
	sv.running.Add(1)
	sv.pool.do(func() {
		defer sv.running.Done()
		sv.read()
	})
}

// watchTick is how often the watch looks at the call being run where the
// stream is read: a call it sees twice has run for at least a tick, and
// another goroutine takes over the reading.
const watchTick = time.Millisecond

// watchIdleTicks is how many ticks without a call the watch waits before
// it sleeps until the next call.
const watchIdleTicks = 100

// watch hands the reading on from a call that has run for a tick or more,
// until the stream ends. It sleeps while no call comes: the first call
// after that wakes it.
func (sv *serving) watch() {
	tick := watchTick
	if sv.fs.watchTick > 0 {
		tick = sv.fs.watchTick
	}
	t := time.NewTimer(tick)
	defer t.Stop()
	for {
		select {
		case <-sv.wake:
		case <-sv.ended:
			return
		}
		t.Reset(tick)
		if !sv.tick(t, tick) {
			return
		}
	}
}

// tick watches until no call has come for watchIdleTicks; false when the
// stream has ended.
func (sv *serving) tick(t *time.Timer, tick time.Duration) bool {
	var (
		seen  *inlineCall
		calls = sv.calls.Load()
		idle  int
	)
	for {
		select {
		case <-t.C:
		case <-sv.ended:
			return false
		}
		sv.mu.Lock()
		c := sv.reading
		sv.mu.Unlock()
		if c != nil && c == seen {
			sv.handOn(c)
			c = nil
		}
		seen = c
		if n := sv.calls.Load(); n != calls || c != nil {
			calls, idle = n, 0
		} else if idle++; idle >= watchIdleTicks {
			sv.watching.Store(false)
			// A call that started before the store saw the watch awake
			// and did not wake it: keep watching for it.
			if sv.calls.Load() == calls || !sv.watching.CompareAndSwap(false, true) {
				return true // asleep; the next call (or this one's) wakes it
			}
			idle = 0
		}
		t.Reset(tick)
	}
}

// run runs one call and sends its answer.
func (sv *serving) run(ctx context.Context, cancel context.CancelFunc, f *pb.CallFrame) {
	if sv.slots != nil {
		defer func() { <-sv.slots }()
	}
	ans := sv.fs.answer(ctx, f)
	sv.mu.Lock()
	delete(sv.cancels, f.GetId())
	sv.mu.Unlock()
	cancel()
	sv.sendMu.Lock()
	defer sv.sendMu.Unlock()
	if d, ok := sv.s.(sendDeadliner); ok {
		_ = d.SetSendDeadline(time.Now().Add(maxSendWait))
	}
	if err := sv.s.Send(ans); err != nil {
		if sv.fs.Log != nil {
			sv.fs.Log.Debug("call stream: answer not sent", "method", f.GetMethod(), "error", err)
		}
		// A peer that does not read its answers (or is gone): a frame may
		// be half written, so the lane is done.
		if c, ok := sv.s.(io.Closer); ok {
			_ = c.Close()
		}
	}
}

// workers are the goroutines a Serve hands its reading on to (see
// serving.handOn). A worker whose reading has ended (its call handed it
// on in turn) waits for the next hand-on rather than exiting: a goroutine
// per hand-on would grow a fresh stack for each (the handlers' decoding
// goes deep), and a plugin whose calls all wait on the host hands on at
// every call. At most maxIdleWorkers wait; the rest exit.
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
