// Package peeruid finds which OS user opened the other end of a loopback
// TCP connection: the uid the kernel recorded for the client's socket,
// which the client cannot choose. A front end without credentials uses it
// to serve only the host's own user, as a Unix socket's SO_PEERCRED does.
//
// On Linux the kernel is asked for the client's socket over
// NETLINK_SOCK_DIAG, in the host's network namespace, where a loopback
// client's socket is: its local address is the connection's remote one
// and its remote address the connection's local one. One request answers
// one socket, however many the machine has; where netlink is not
// available, /proc/net/tcp and /proc/net/tcp6 are read instead.
//
// The answer also names the socket's inode, and the processes holding it
// are those with a descriptor linked to socket:[inode] (Processes,
// HeldAmong): the front end refuses a client that is a plugin of a host,
// which runs as the host's own user and would otherwise be served as that
// user.
package peeruid

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// ErrNotFound is returned when no socket of the table is the connection's
// other end: the client has already gone, or it is in another network
// namespace.
var ErrNotFound = errors.New("the client's socket is not in the host's socket table")

// ErrNoProcess is returned by Processes when no process of the socket's
// user that this one can see holds it: the client has gone, or hides.
var ErrNoProcess = errors.New("no process of the socket's user holds the client's socket")

// ErrUnsupported is returned where the system gives no way to tell.
var ErrUnsupported = errors.New("telling a TCP client's user is supported on Linux only")

// Socket is the client's end of a loopback connection, as the host's
// socket table records it.
type Socket struct {
	// UID is the user whose process opened it.
	UID int
	// Inode names it in /proc/PID/fd ("socket:[Inode]"): Processes finds
	// who holds it.
	Inode uint64
}

// Lookup returns the client's socket of c, a loopback TCP connection
// accepted by this process.
func Lookup(c net.Conn) (Socket, error) {
	l, r, err := loopbackEnds(c)
	if err != nil {
		return Socket{}, err
	}
	return lookup(l, r)
}

// loopbackEnds returns c's local and remote addresses, refusing a
// connection that is not a loopback TCP one.
func loopbackEnds(c net.Conn) (local, remote netip.AddrPort, err error) {
	l, ok1 := c.LocalAddr().(*net.TCPAddr)
	r, ok2 := c.RemoteAddr().(*net.TCPAddr)
	if !ok1 || !ok2 {
		return local, remote, fmt.Errorf("not a TCP connection (%s)", c.LocalAddr().Network())
	}
	local, remote = l.AddrPort(), r.AddrPort()
	if !local.Addr().Unmap().IsLoopback() || !remote.Addr().Unmap().IsLoopback() {
		return local, remote, fmt.Errorf("%s is not a loopback client", remote)
	}
	return local, remote, nil
}

// Processes returns the pids of the processes of s.UID that hold s (one,
// unless it was inherited or passed on), found by the descriptors in
// /proc/PID/fd; ErrNoProcess when there is none. It reads every such
// process's descriptors, once per call: call it once per connection.
func (s Socket) Processes() ([]int, error) { return processes(s) }

// HeldAmong returns those of pids, and of their descendants that have not
// left their parent, that run as s.UID and hold s: the holders of s a
// caller already knows of, found without reading the descriptors of every
// process of the user as Processes does. It reads only those processes
// (at most 1024); a holder outside them is not found, so an empty answer
// means only that none of them holds s.
func (s Socket) HeldAmong(pids []int) []int { return heldAmong(s, pids) }

// scanTable calls each with every socket line of a table (its text and
// fields, at least 10 of them) until each returns false or an error; a
// line that is not of the table's shape is an error.
func scanTable(r io.Reader, each func(line string, f []string) (bool, error)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 512), 4096)
	first := true
	for sc.Scan() {
		line := sc.Text()
		if first {
			first = false
			if strings.Contains(line, "local_address") {
				continue // the header
			}
		}
		f := strings.Fields(line)
		if len(f) < 10 {
			return fmt.Errorf("socket table line %q: %d fields, want at least 10", truncate(line), len(f))
		}
		if more, err := each(line, f); err != nil || !more {
			return err
		}
	}
	return sc.Err()
}

// socketOf reads the uid and inode of a table line's fields f.
func socketOf(line string, f []string) (Socket, error) {
	u, err := strconv.ParseUint(f[7], 10, 32)
	if err != nil {
		return Socket{}, fmt.Errorf("socket table line %q: uid %q: %w", truncate(line), f[7], err)
	}
	ino, err := strconv.ParseUint(f[9], 10, 64)
	if err != nil {
		return Socket{}, fmt.Errorf("socket table line %q: inode %q: %w", truncate(line), f[9], err)
	}
	return Socket{UID: int(u), Inode: ino}, nil
}

// procAddr writes ap as the tables do: the address as 32-bit words in the
// kernel's byte order, each as 8 hex digits, then ':' and the port as 4.
func procAddr(ap netip.AddrPort) string {
	var b strings.Builder
	a := ap.Addr()
	var raw []byte
	if a.Is4() {
		v := a.As4()
		raw = v[:]
	} else {
		v := a.As16()
		raw = v[:]
	}
	for i := 0; i < len(raw); i += 4 {
		fmt.Fprintf(&b, "%08X", binary.NativeEndian.Uint32(raw[i:i+4]))
	}
	fmt.Fprintf(&b, ":%04X", ap.Port())
	return b.String()
}

func truncate(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}
