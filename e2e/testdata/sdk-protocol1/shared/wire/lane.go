package wire

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// EnvCallLanes tells a plugin the file descriptors of its two call lanes,
// "3,4": the host calls the plugin's stage handlers on the first, the
// plugin calls the host back (Next, ExecuteTool, CallService) on the
// second. A plugin that serves them says so in Describe
// (DescribeResponse.call_lanes); one that does not leaves them alone and
// is called over gRPC.
const EnvCallLanes = "PLUGKIT_CALL_LANES"

// A lane is one end of a Unix socket pair the host made before it started
// the plugin and passed to it as an inherited file descriptor: nothing else
// can connect to it, so it needs neither a socket path nor TLS. It carries
// CallFrames, each as a 4-byte big-endian length and the serialized frame.
// A call on a lane costs a write and a read on each side and none of
// HTTP/2's goroutine hand-offs: this is the host's fastest way into a
// plugin process (see docs/remote-call-profile.md).

// laneReadBuffer is the size of a lane's read buffer: most frames are a
// few hundred bytes, read in one system call.
const laneReadBuffer = 32 << 10

// Lane is one end of a call lane, a FrameStream.
type Lane struct {
	conn  net.Conn
	r     *bufio.Reader
	write func([]byte) error // writes all of a frame
	max   int                // the largest frame it reads
	buf   []byte             // Send's buffer, reused (sends are serialised)

	// The frame being read, kept across a Recv that a read deadline
	// interrupts, so that the next Recv goes on where it stopped.
	head [4]byte
	hn   int    // bytes of head read
	body []byte // nil until head is whole
	bn   int    // bytes of body read
}

// NewLane makes conn a lane whose frames are at most maxBytes (the message
// limit, plus what a frame adds to a message).
func NewLane(conn net.Conn, maxBytes int) *Lane {
	r, write := laneIO(conn)
	return &Lane{conn: conn, r: bufio.NewReaderSize(r, laneReadBuffer), write: write, max: maxBytes + CallFrameOverhead}
}

// writeAll writes with w's own Write (which writes all of b or fails).
func writeAll(w io.Writer) func([]byte) error {
	return func(b []byte) error {
		_, err := w.Write(b)
		return err
	}
}

// Send writes f in one write. Not safe for concurrent use.
func (l *Lane) Send(f *pb.CallFrame) error {
	buf, err := proto.MarshalOptions{}.MarshalAppend(append(l.buf[:0], 0, 0, 0, 0), f)
	if err != nil {
		return err
	}
	if len(buf)-4 > l.max {
		return fmt.Errorf("frame of %d bytes is over the lane's %d-byte limit", len(buf)-4, l.max)
	}
	binary.BigEndian.PutUint32(buf, uint32(len(buf)-4))
	if cap(buf) <= laneReadBuffer {
		l.buf = buf // kept for the next send unless it grew large
	}
	return l.write(buf)
}

// Recv reads the next frame. A frame over the limit ends the lane. A Recv
// interrupted by the read deadline (SetRecvDeadline) loses nothing: the
// next one goes on with the same frame.
func (l *Lane) Recv() (*pb.CallFrame, error) {
	for l.body == nil {
		if l.hn < len(l.head) {
			n, err := l.r.Read(l.head[l.hn:])
			l.hn += n
			if err != nil {
				return nil, err
			}
			continue
		}
		n := binary.BigEndian.Uint32(l.head[:])
		if uint64(n) > uint64(l.max) {
			return nil, fmt.Errorf("frame of %d bytes is over the lane's %d-byte limit", n, l.max)
		}
		l.body, l.bn = make([]byte, n), 0
	}
	for l.bn < len(l.body) {
		n, err := l.r.Read(l.body[l.bn:])
		l.bn += n
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	body := l.body
	l.body, l.hn = nil, 0
	f := &pb.CallFrame{}
	if err := proto.Unmarshal(body, f); err != nil {
		return nil, fmt.Errorf("bad frame: %w", err)
	}
	return f, nil
}

// SetRecvDeadline bounds the Recv in progress and those that follow: past
// it, Recv fails with os.ErrDeadlineExceeded and keeps what it has read of
// its frame. The zero time lifts the bound.
func (l *Lane) SetRecvDeadline(t time.Time) error { return l.conn.SetReadDeadline(t) }

// SetSendDeadline bounds the sends that follow: a Send past it fails, and
// may have written part of its frame (the lane is then unusable).
func (l *Lane) SetSendDeadline(t time.Time) error { return l.conn.SetWriteDeadline(t) }

// Close closes the lane; the peer's Recv then fails.
func (l *Lane) Close() error { return l.conn.Close() }
