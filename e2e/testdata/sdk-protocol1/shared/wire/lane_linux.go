//go:build linux

package wire

import (
	"io"
	"net"
	"sync/atomic"
	"syscall"
	"unsafe"
)

// laneIO reads and writes conn with raw system calls when it is a socket:
// the runtime still parks a goroutine whose read or write would block (in
// its network poller, so deadlines hold), but a call that does not block
// skips entering and leaving a system call. That step, on an otherwise
// idle process, wakes the runtime's monitor thread (sysmon) on every
// read: a futex wake and a thread on another core per frame, more than a
// third of a call's system calls (see docs/remote-call-profile.md). The
// descriptors are non-blocking, so a raw call never blocks a thread.
func laneIO(conn net.Conn) (io.Reader, func([]byte) error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return conn, writeAll(conn)
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return conn, writeAll(conn)
	}
	r := newRawIO(rc)
	return r, r.Write
}

// ioSync stands, for the race detector, for the order a socket gives: a
// read sees what a write before it wrote. The syscall package tells the
// detector so for its reads and writes; raw ones must say it themselves.
var ioSync atomic.Uint64

// rawIO reads and writes one socket with raw system calls. Its reads are
// serialised (a Lane has one reader), and so are its writes (Lane.Send),
// so each side keeps its state here and hands the runtime a callback
// bound once, rather than a closure per call.
type rawIO struct {
	rc syscall.RawConn

	rb     []byte
	rn     int
	rerrno syscall.Errno
	readFn func(fd uintptr) bool

	wb      []byte
	werrno  syscall.Errno
	writeFn func(fd uintptr) bool
}

func newRawIO(rc syscall.RawConn) *rawIO {
	r := &rawIO{rc: rc}
	r.readFn, r.writeFn = r.tryRead, r.tryWrite
	return r
}

// Read reads into b: at least a byte, or an error.
func (r *rawIO) Read(b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	r.rb, r.rn, r.rerrno = b, 0, 0
	err := r.rc.Read(r.readFn)
	n, errno := r.rn, r.rerrno
	r.rb = nil
	switch {
	case err != nil:
		return 0, err // closed, or past the read deadline
	case errno != 0:
		return 0, errno
	case n == 0:
		return 0, io.EOF
	}
	if raceEnabled {
		ioSync.Load()
	}
	return n, nil
}

// tryRead reads once; false asks the runtime to wait until fd is readable.
func (r *rawIO) tryRead(fd uintptr) bool {
	for {
		n, _, e := syscall.RawSyscall(syscall.SYS_READ, fd, uintptr(unsafe.Pointer(&r.rb[0])), uintptr(len(r.rb)))
		switch e {
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return false
		}
		r.rn, r.rerrno = int(n), e
		return true
	}
}

// Write writes all of b.
func (r *rawIO) Write(b []byte) error {
	if len(b) == 0 {
		return nil
	}
	if raceEnabled {
		ioSync.Add(1)
	}
	r.wb, r.werrno = b, 0
	err := r.rc.Write(r.writeFn)
	errno := r.werrno
	r.wb = nil
	if err != nil {
		return err
	}
	if errno != 0 {
		return errno
	}
	return nil
}

// tryWrite writes what it can; false asks the runtime to wait until fd is
// writable.
func (r *rawIO) tryWrite(fd uintptr) bool {
	for len(r.wb) > 0 {
		n, _, e := syscall.RawSyscall(syscall.SYS_WRITE, fd, uintptr(unsafe.Pointer(&r.wb[0])), uintptr(len(r.wb)))
		switch e {
		case 0:
			r.wb = r.wb[n:]
		case syscall.EINTR:
		case syscall.EAGAIN:
			return false
		default:
			r.werrno = e
			return true
		}
	}
	return true
}
