package peeruid

import (
	"encoding/binary"
	"errors"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"testing"

	"golang.org/x/sys/unix"
)

// dialed returns both ends of a loopback connection to a listener on
// addr, closed when the test ends.
func dialed(t *testing.T, listen, dial string) (client, server net.Conn) {
	t.Helper()
	ln, err := net.Listen("tcp", listen)
	if err != nil {
		t.Skipf("no %s here: %v", listen, err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	client, err = net.Dial("tcp", net.JoinHostPort(dial, port))
	if err != nil {
		t.Skipf("cannot dial %s: %v", dial, err)
	}
	t.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { server.Close() })
	return client, server
}

// TestDiagAgreesWithTables: the kernel's answer over NETLINK_SOCK_DIAG
// names the same uid and inode as the socket tables, over IPv4, IPv6 and
// an IPv4 client of a listener on both families (v4-mapped addresses).
func TestDiagAgreesWithTables(t *testing.T) {
	for _, tc := range []struct{ name, listen, dial string }{
		{"ipv4", "127.0.0.1:0", "127.0.0.1"},
		{"ipv6", "[::1]:0", "::1"},
		{"v4-mapped", "[::]:0", "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, server := dialed(t, tc.listen, tc.dial)
			l, r, err := loopbackEnds(server)
			if err != nil {
				t.Fatal(err)
			}
			byDiag, err := diagLookup(r, l)
			if err != nil {
				t.Fatalf("diagLookup(%s, %s): %v", r, l, err)
			}
			byTables, err := LookupTables(server)
			if err != nil {
				t.Fatal(err)
			}
			if byDiag != byTables || byDiag.UID != os.Getuid() || byDiag.Inode == 0 {
				t.Fatalf("diag %+v, tables %+v; want the same socket of uid %d", byDiag, byTables, os.Getuid())
			}
			// The server's own end is another socket.
			own, err := diagLookup(l, r)
			if err != nil || own.Inode == byDiag.Inode {
				t.Fatalf("the server's end: %+v, %v", own, err)
			}
		})
	}
}

// TestDiagNotFound: no socket has those addresses, and the kernel says so.
func TestDiagNotFound(t *testing.T) {
	_, err := diagLookup(netip.MustParseAddrPort("127.0.0.1:1"), netip.MustParseAddrPort("127.0.0.1:2"))
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("diagLookup of no socket = %v, want ErrNotFound", err)
	}
}

// TestParseDiagAnswer: an answer describing another socket than the one
// asked for, a short one, and an error other than "no such socket" are
// errors, never a uid.
func TestParseDiagAnswer(t *testing.T) {
	client, server := netip.MustParseAddrPort("127.0.0.1:50000"), netip.MustParseAddrPort("127.0.0.1:8800")
	answer := func(typ uint16, body []byte) []byte {
		b := make([]byte, nlmsgHdrLen, nlmsgHdrLen+len(body))
		binary.NativeEndian.PutUint32(b[0:], uint32(nlmsgHdrLen+len(body)))
		binary.NativeEndian.PutUint16(b[4:], typ)
		return append(b, body...)
	}
	msg := func(c, s netip.AddrPort) []byte {
		req := diagRequest(c, s) // the same sockid layout as the answer's
		body := make([]byte, diagMsgLen)
		body[0] = unix.AF_INET
		copy(body[diagMsgSockID:], req[nlmsgHdrLen+8:nlmsgHdrLen+8+48])
		binary.NativeEndian.PutUint32(body[diagMsgUID:], 1000)
		binary.NativeEndian.PutUint32(body[diagMsgInode:], 4242)
		return body
	}
	if s, err := parseDiagAnswer(answer(unix.SOCK_DIAG_BY_FAMILY, msg(client, server)), client, server); err != nil || s != (Socket{UID: 1000, Inode: 4242}) {
		t.Fatalf("a well-formed answer: %+v, %v", s, err)
	}
	other := netip.MustParseAddrPort("127.0.0.1:50001")
	errno := func(e unix.Errno) []byte {
		b := make([]byte, 4)
		binary.NativeEndian.PutUint32(b, uint32(-int32(e)))
		return b
	}
	for name, b := range map[string][]byte{
		"another socket": answer(unix.SOCK_DIAG_BY_FAMILY, msg(other, server)),
		"short":          answer(unix.SOCK_DIAG_BY_FAMILY, msg(client, server)[:40]),
		"truncated":      answer(unix.SOCK_DIAG_BY_FAMILY, msg(client, server))[:30],
		"denied":         answer(unix.NLMSG_ERROR, errno(unix.EPERM)),
		"other type":     answer(unix.NLMSG_DONE, nil),
	} {
		if s, err := parseDiagAnswer(b, client, server); err == nil || errors.Is(err, ErrNotFound) {
			t.Errorf("%s: %+v, %v; want an error", name, s, err)
		}
	}
	if _, err := parseDiagAnswer(answer(unix.NLMSG_ERROR, errno(unix.ENOENT)), client, server); !errors.Is(err, ErrNotFound) {
		t.Errorf("ENOENT: %v, want ErrNotFound", err)
	}
}

// TestHeldAmong: the client's socket is found held by this process, and
// by a child that inherited it when only this process is named; not by
// a process that does not hold it.
func TestHeldAmong(t *testing.T) {
	client, server := dialed(t, "127.0.0.1:0", "127.0.0.1")
	s, err := Lookup(server)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.HeldAmong([]int{os.Getpid()}); !slices.Equal(got, []int{os.Getpid()}) {
		t.Fatalf("HeldAmong(self) = %v, want [%d]", got, os.Getpid())
	}
	f, err := client.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	child := exec.Command("sleep", "60")
	child.ExtraFiles = []*os.File{f}
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer func() { child.Process.Kill(); child.Wait() }()
	got := s.HeldAmong([]int{os.Getpid()})
	slices.Sort(got)
	want := []int{os.Getpid(), child.Process.Pid}
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("HeldAmong(self) with a child holding it = %v, want %v", got, want)
	}
	// The full scan finds the same.
	all, err := s.Processes()
	slices.Sort(all)
	if err != nil || !slices.Equal(all, want) {
		t.Fatalf("Processes = %v, %v; want %v", all, err, want)
	}
	other, _ := Lookup(client) // the server's end: nobody else holds it
	if got := other.HeldAmong([]int{child.Process.Pid}); len(got) != 0 {
		t.Fatalf("HeldAmong(child) of the server's end = %v, want none", got)
	}
}
