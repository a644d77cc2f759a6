//go:build unix

package wire

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// laneLimit is the message limit of the lanes under test.
const laneLimit = 64 << 10

// lanePair is a socket pair as a host and its plugin hold it: the host's
// end and the plugin's inherited end, both as connections.
func lanePair(t testing.TB) (host, peer net.Conn) {
	t.Helper()
	host, child, err := LanePair()
	if err != nil {
		t.Fatal(err)
	}
	peer, err = net.FileConn(child)
	child.Close()
	if err != nil {
		t.Fatal(err)
	}
	return host, peer
}

// laneClient is a FrameClient on the host's end of a lane.
func laneClient(host net.Conn, inFlight int, exited func() bool) *FrameClient {
	c := NewFrameClient(FrameClientConfig{
		Service:         "plugkit.v1.Plugin",
		MaxMessageBytes: laneLimit,
		MaxInFlight:     inFlight,
		Open:            func() (FrameStream, func(), error) { return NewLane(host, laneLimit), func() { host.Close() }, nil },
		PeerExited:      exited,
	})
	c.Enable()
	return c
}

// lanePeers connects a FrameClient to a FrameServer that runs handle over
// a real socket pair and returns the client and a func that closes the
// server's end.
func lanePeers(t testing.TB, handle func(ctx context.Context, f *pb.CallFrame) (proto.Message, error), exited func() bool) (*FrameClient, func()) {
	t.Helper()
	return lanePeersWith(t, &FrameServer{Handle: handle, MaxMessageBytes: laneLimit}, 8, exited)
}

// lanePeersWith is lanePeers with a server of the test's making and
// inFlight calls at most on the client.
func lanePeersWith(t testing.TB, fs *FrameServer, inFlight int, exited func() bool) (*FrameClient, func()) {
	t.Helper()
	host, peer := lanePair(t)
	served := make(chan struct{})
	go func() {
		defer close(served)
		fs.Serve(context.Background(), NewLane(peer, laneLimit))
	}()
	c := laneClient(host, inFlight, exited)
	closePeer := sync.OnceFunc(func() { peer.Close() })
	t.Cleanup(func() {
		c.Close()
		closePeer()
		<-served
	})
	return c, closePeer
}

// guardHandler answers Guard with the tool's name as the reason, after
// waiting as long as the tool's name says (in milliseconds, "w20").
func guardHandler(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
	return HandleFrame(ctx, f, "plugkit.v1.Plugin", func(ctx context.Context, req *pb.GuardRequest) (*pb.GuardResponse, error) {
		name := req.GetExecution().GetName()
		if ms, err := strconv.Atoi(strings.TrimPrefix(name, "w")); err == nil {
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
		}
		return &pb.GuardResponse{Reason: name}, nil
	}, nil)
}

func guard(ctx context.Context, c *FrameClient, name string) (string, error) {
	resp := &pb.GuardResponse{}
	err := c.Invoke(ctx, "Guard", &pb.GuardRequest{Execution: &pb.Execution{Name: name}}, resp)
	return resp.GetReason(), err
}

func never() bool { return false }

// TestLaneCalls: concurrent calls, answered out of order, each get their
// own answer.
func TestLaneCalls(t *testing.T) {
	c, _ := lanePeers(t, guardHandler, never)
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for i := range 32 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := "w" + strconv.Itoa((32-i)%7) // later calls answer sooner
			got, err := guard(t.Context(), c, name)
			if err != nil || got != name {
				errs <- fmt.Errorf("call %s: got %q, %v", name, got, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// TestLaneCancel: a cancelled call fails CANCELLED at once, and the
// handler's context is cancelled by the cancel frame.
func TestLaneCancel(t *testing.T) {
	seen := make(chan error, 1)
	c, _ := lanePeers(t, func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		<-ctx.Done()
		seen <- ctx.Err()
		return nil, ctx.Err()
	}, never)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { time.Sleep(20 * time.Millisecond); cancel() }()
	_, err := guard(ctx, c, "x")
	if status.Code(err) != codes.Canceled {
		t.Fatalf("err = %v, want CANCELLED", err)
	}
	select {
	case err := <-seen:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("handler saw %v, want its context cancelled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was never cancelled")
	}
}

// TestLaneDeadline: the handler runs under the caller's deadline, and a
// call past it fails DEADLINE_EXCEEDED.
func TestLaneDeadline(t *testing.T) {
	deadlines := make(chan time.Time, 1)
	c, _ := lanePeers(t, func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		d, _ := ctx.Deadline()
		deadlines <- d
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}, never)
	want := time.Now().Add(50 * time.Millisecond)
	ctx, cancel := context.WithDeadline(t.Context(), want)
	defer cancel()
	if _, err := guard(ctx, c, "x"); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("err = %v, want DEADLINE_EXCEEDED", err)
	}
	if got := <-deadlines; !got.Equal(want) {
		t.Fatalf("handler's deadline %v, want %v", got, want)
	}
}

// TestLanePeerGone: calls in flight when the peer's end closes fail
// UNAVAILABLE; later calls go as RPCs while the peer process lives, and
// fail UNAVAILABLE once it has exited.
func TestLanePeerGone(t *testing.T) {
	var mu sync.Mutex
	exited := false
	isExited := func() bool { mu.Lock(); defer mu.Unlock(); return exited }
	started := make(chan struct{})
	c, closePeer := lanePeers(t, func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		close(started)
		<-ctx.Done()
		return nil, ctx.Err()
	}, isExited)
	done := make(chan error, 1)
	go func() { _, err := guard(t.Context(), c, "x"); done <- err }()
	<-started
	closePeer()
	select {
	case err := <-done:
		if status.Code(err) != codes.Unavailable {
			t.Fatalf("in flight: err = %v, want UNAVAILABLE", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call in flight did not fail when the lane closed")
	}
	if _, err := guard(t.Context(), c, "x"); !errors.Is(err, ErrUnary) {
		t.Fatalf("peer alive: err = %v, want ErrUnary", err)
	}
	mu.Lock()
	exited = true
	mu.Unlock()
	if _, err := guard(t.Context(), c, "x"); status.Code(err) != codes.Unavailable {
		t.Fatalf("peer exited: err = %v, want UNAVAILABLE", err)
	}
}

// TestLaneSizes: a request too large for a frame goes as an RPC; an answer
// too large fails its call, and the lane carries the next one.
func TestLaneSizes(t *testing.T) {
	c, _ := lanePeers(t, guardHandler, never)
	if _, err := guard(t.Context(), c, strings.Repeat("x", laneLimit)); !errors.Is(err, ErrUnary) {
		t.Fatalf("large request: err = %v, want ErrUnary", err)
	}
	big, _ := lanePeers(t, func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		return &pb.GuardResponse{Reason: strings.Repeat("y", laneLimit)}, nil
	}, never)
	if _, err := guard(t.Context(), big, "x"); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("large answer: err = %v, want RESOURCE_EXHAUSTED", err)
	}
	if _, err := guard(t.Context(), big, "x"); status.Code(err) != codes.ResourceExhausted {
		t.Fatalf("after a large answer: err = %v, want the lane to answer again", err)
	}
}

// TestLanePanic: a handler's panic fails its call as INTERNAL and the lane
// serves on.
func TestLanePanic(t *testing.T) {
	c, _ := lanePeers(t, func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		if f.GetMethod() == "Guard" {
			panic("boom")
		}
		return nil, UnknownFrameMethod(f.GetMethod())
	}, never)
	if _, err := guard(t.Context(), c, "x"); status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "boom") {
		t.Fatalf("err = %v, want INTERNAL with the panic", err)
	}
	err := c.Invoke(t.Context(), "Nope", &pb.GuardRequest{}, &pb.GuardResponse{})
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("unknown method: err = %v, want UNIMPLEMENTED", err)
	}
}

// TestLaneFrameOverLimit: a peer announcing a frame over the limit ends
// the lane instead of making the reader allocate it.
func TestLaneFrameOverLimit(t *testing.T) {
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	go func() { _, _ = a.Write([]byte{0x7f, 0xff, 0xff, 0xff}) }()
	if _, err := NewLane(b, laneLimit).Recv(); err == nil || !strings.Contains(err.Error(), "over the lane's") {
		t.Fatalf("err = %v, want the frame refused", err)
	}
}

// TestInheritedLanes: the lanes named by PLUGKIT_CALL_LANES are opened as
// connections to the host's ends; a malformed value is an error that names
// the variable.
func TestInheritedLanes(t *testing.T) {
	var hosts []net.Conn
	var fds []string
	for range 2 {
		host, child, err := LanePair()
		if err != nil {
			t.Fatal(err)
		}
		defer host.Close()
		// A bare descriptor, as a process inherits it: InheritedLanes
		// owns and closes it.
		fd, err := unix.Dup(int(child.Fd()))
		child.Close()
		if err != nil {
			t.Fatal(err)
		}
		hosts = append(hosts, host)
		fds = append(fds, strconv.Itoa(fd))
	}
	t.Setenv(EnvCallLanes, strings.Join(fds, ","))
	calls, callbacks, ok, err := InheritedLanes()
	if err != nil || !ok {
		t.Fatalf("InheritedLanes: %v, %v", ok, err)
	}
	defer calls.Close()
	defer callbacks.Close()
	for i, c := range []net.Conn{calls, callbacks} {
		go func() { _ = NewLane(hosts[i], laneLimit).Send(&pb.CallFrame{Id: uint64(i + 1)}) }()
		f, err := NewLane(c, laneLimit).Recv()
		if err != nil || f.GetId() != uint64(i+1) {
			t.Fatalf("lane %d: %v, %v", i, f, err)
		}
	}
	for _, bad := range []string{"3", "x,4", "1,2"} {
		t.Setenv(EnvCallLanes, bad)
		if _, _, _, err := InheritedLanes(); err == nil || !strings.Contains(err.Error(), EnvCallLanes) {
			t.Errorf("%s=%q: err = %v, want one naming the variable", EnvCallLanes, bad, err)
		}
	}
	t.Setenv(EnvCallLanes, "")
	if _, _, ok, err := InheritedLanes(); ok || err != nil {
		t.Fatalf("no lanes: %v, %v", ok, err)
	}
}

// TestWorkersReusedAndBounded: a finished worker runs the next call; no
// more than maxIdleWorkers wait, and stop ends them.
func TestWorkersReusedAndBounded(t *testing.T) {
	w := newWorkers()
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 * maxIdleWorkers {
		wg.Add(1)
		w.do(func() { defer wg.Done(); <-release })
	}
	close(release)
	wg.Wait()
	// A worker that finds the idle ones full counts itself in, then out
	// again before it exits: 17 for a moment is that, not a 17th waiter.
	deadline := time.Now().Add(10 * time.Second)
	for w.idle.Load() != maxIdleWorkers && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	if n := w.idle.Load(); n != maxIdleWorkers {
		t.Fatalf("%d workers wait, want %d", n, maxIdleWorkers)
	}
	// A waiting worker takes the next call: no new goroutine.
	done := make(chan struct{})
	w.do(func() { close(done) })
	<-done
	w.stop()
}

// TestLaneStalledPeer: a peer that stops reading its lane (frozen, or
// hostile) cannot make calls hang: once the socket's buffer is full a send
// fails by the call's deadline, the lane is given up, and later calls go
// as RPCs.
func TestLaneStalledPeer(t *testing.T) {
	host, peer := lanePair(t)
	defer peer.Close() // open, never read
	c := laneClient(host, 8, never)
	defer c.Close()
	name := strings.Repeat("x", laneLimit/2)
	for i := range 1000 {
		ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
		done := make(chan error, 1)
		go func() { _, err := guard(ctx, c, name); done <- err }()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("call %d still waits 5 s after its 50 ms deadline", i)
		}
		cancel()
		if errors.Is(err, ErrUnary) {
			return // given up: the RPC takes over
		}
		if c := status.Code(err); c != codes.DeadlineExceeded && c != codes.Unavailable {
			t.Fatalf("call %d: %v", i, err)
		}
	}
	t.Fatal("a lane nobody reads was never given up")
}

// TestFrameServerMaxInFlight: past MaxInFlight calls running, the server
// reads no more frames until one ends.
func TestFrameServerMaxInFlight(t *testing.T) {
	const limit = 4
	var (
		mu           sync.Mutex
		running, top int
	)
	release := make(chan struct{})
	c, _ := lanePeersWith(t, &FrameServer{MaxMessageBytes: laneLimit, MaxInFlight: limit, Handle: func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		mu.Lock()
		running++
		top = max(top, running)
		mu.Unlock()
		<-release
		mu.Lock()
		running--
		mu.Unlock()
		return &pb.GuardResponse{}, nil
	}}, 64, never)
	var wg sync.WaitGroup
	for range 3 * limit {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := guard(t.Context(), c, "x"); err != nil {
				t.Error(err)
			}
		}()
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := running
		mu.Unlock()
		if n == limit || time.Now().After(deadline) {
			break
		}
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // room for a call over the limit to start, if one could
	close(release)
	wg.Wait()
	if top != limit {
		t.Fatalf("at most %d calls ran at once, want %d", top, limit)
	}
}

// blockingPeers is lanePeers whose handler answers a call named "block"
// only once release is closed, and calls BeforeWait first when the
// server's calls are told to (wait).
func blockingPeers(t *testing.T, wait bool, tick time.Duration) (c *FrameClient, blocked <-chan struct{}, release func()) {
	t.Helper()
	started, released := make(chan struct{}), make(chan struct{})
	c, _ = lanePeersWith(t, &FrameServer{MaxMessageBytes: laneLimit, watchTick: tick, Handle: func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		return HandleFrame(ctx, f, "plugkit.v1.Plugin", func(ctx context.Context, req *pb.GuardRequest) (*pb.GuardResponse, error) {
			if req.GetExecution().GetName() == "block" {
				if wait {
					BeforeWait(ctx)
				}
				close(started)
				<-released
			}
			return &pb.GuardResponse{Reason: req.GetExecution().GetName()}, nil
		}, nil)
	}}, 8, never)
	release = sync.OnceFunc(func() { close(released) })
	t.Cleanup(release) // before the server's cleanup, should the test fail
	return c, started, release
}

// behindBlocked runs a call while a call of the same lane blocks: it must
// be answered before the blocked one is released.
func behindBlocked(t *testing.T, c *FrameClient, blocked <-chan struct{}, release func()) {
	t.Helper()
	first := make(chan error, 1)
	go func() { _, err := guard(t.Context(), c, "block"); first <- err }()
	<-blocked
	done := make(chan error, 1)
	go func() { _, err := guard(t.Context(), c, "next"); done <- err }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("call behind a blocked one: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a call behind a blocked one was not answered")
	}
	release()
	if err := <-first; err != nil {
		t.Fatalf("blocked call: %v", err)
	}
}

// TestLaneBlockedCallHandsOn: a call runs on the goroutine that read it;
// one that blocks, without a word (BeforeWait), still gives the reading
// to another goroutine once the server's watch sees it run on.
func TestLaneBlockedCallHandsOn(t *testing.T) {
	c, blocked, release := blockingPeers(t, false, 0)
	behindBlocked(t, c, blocked, release)
}

// TestLaneBeforeWaitHandsOn: a call that says it is about to wait hands
// the reading on at once: with the watch slowed to an hour, the call
// behind it is still answered.
func TestLaneBeforeWaitHandsOn(t *testing.T) {
	c, blocked, release := blockingPeers(t, true, time.Hour)
	behindBlocked(t, c, blocked, release)
}

// TestLaneInlineCallsMany: many calls, some handing the reading on and
// some not, all answered, and Serve ends with no goroutine left (the
// package's leak check).
func TestLaneInlineCallsMany(t *testing.T) {
	c, _ := lanePeers(t, func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		return HandleFrame(ctx, f, "plugkit.v1.Plugin", func(ctx context.Context, req *pb.GuardRequest) (*pb.GuardResponse, error) {
			if n, _ := strconv.Atoi(req.GetExecution().GetName()); n%3 == 0 {
				BeforeWait(ctx)
				time.Sleep(time.Millisecond)
			}
			return &pb.GuardResponse{Reason: req.GetExecution().GetName()}, nil
		}, nil)
	}, never)
	var wg sync.WaitGroup
	for i := range 200 {
		wg.Go(func() {
			name := strconv.Itoa(i)
			if got, err := guard(t.Context(), c, name); err != nil || got != name {
				t.Errorf("call %s = %q, %v", name, got, err)
			}
		})
	}
	wg.Wait()
}

// TestLaneReaderGivesUp: the callers read their answers themselves; when
// the one reading gives up (its context ends), a caller still waiting
// takes up the reading and gets its answer.
func TestLaneReaderGivesUp(t *testing.T) {
	started := make(chan string, 2)
	release := make(chan struct{})
	c, _ := lanePeers(t, func(ctx context.Context, f *pb.CallFrame) (proto.Message, error) {
		return HandleFrame(ctx, f, "plugkit.v1.Plugin", func(ctx context.Context, req *pb.GuardRequest) (*pb.GuardResponse, error) {
			name := req.GetExecution().GetName()
			started <- name
			select {
			case <-release:
			case <-ctx.Done():
				return nil, status.FromContextError(ctx.Err()).Err()
			}
			return &pb.GuardResponse{Reason: name}, nil
		}, nil)
	}, never)
	actx, cancelA := context.WithCancel(t.Context())
	defer cancelA()
	a := make(chan error, 1)
	go func() { _, err := guard(actx, c, "a"); a <- err }()
	<-started // a reads the lane now: the only caller
	b := make(chan string, 1)
	go func() {
		got, err := guard(t.Context(), c, "b")
		if err != nil {
			got = err.Error()
		}
		b <- got
	}()
	<-started
	cancelA()
	if err := <-a; status.Code(err) != codes.Canceled {
		t.Fatalf("a: err = %v, want CANCELLED", err)
	}
	close(release)
	select {
	case got := <-b:
		if got != "b" {
			t.Fatalf("b = %q, want its own answer", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("b was never answered after a gave up the reading")
	}
}

// TestLaneRecvInterrupted: a Recv the read deadline interrupts mid-frame
// keeps what it read; the next Recv returns the whole frame.
func TestLaneRecvInterrupted(t *testing.T) {
	host, peer := lanePair(t)
	defer host.Close()
	defer peer.Close()
	raw, err := proto.Marshal(&pb.CallFrame{Id: 7, Method: "Guard", Request: []byte(strings.Repeat("x", 1000))})
	if err != nil {
		t.Fatal(err)
	}
	frame := append([]byte{0, 0, byte(len(raw) >> 8), byte(len(raw))}, raw...)
	l := NewLane(host, laneLimit)
	for _, cut := range []int{2, 300} { // in the header, in the body
		if _, err := peer.Write(frame[:cut]); err != nil {
			t.Fatal(err)
		}
		_ = l.SetRecvDeadline(time.Now().Add(20 * time.Millisecond))
		if _, err := l.Recv(); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Fatalf("cut at %d: err = %v, want the deadline", cut, err)
		}
		_ = l.SetRecvDeadline(time.Time{})
		if _, err := peer.Write(frame[cut:]); err != nil {
			t.Fatal(err)
		}
		f, err := l.Recv()
		if err != nil || f.GetId() != 7 || len(f.GetRequest()) != 1000 {
			t.Fatalf("cut at %d: got %v, %v; want the whole frame", cut, f, err)
		}
	}
}
