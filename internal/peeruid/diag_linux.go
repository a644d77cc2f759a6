package peeruid

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"

	"golang.org/x/sys/unix"
)

// Asking the kernel for one socket over NETLINK_SOCK_DIAG (inet_diag)
// answers with its uid and inode without reading the whole socket table,
// which grows with every connection on the machine. The request and the
// answer are fixed C structures (linux/inet_diag.h), written here by hand:
// golang.org/x/sys/unix has the constants but not these types.
const (
	nlmsgHdrLen   = 16 // struct nlmsghdr
	diagReqLen    = 56 // struct inet_diag_req_v2
	diagMsgLen    = 72 // struct inet_diag_msg
	diagMsgUID    = 64 // offset of idiag_uid in inet_diag_msg
	diagMsgInode  = 68 // offset of idiag_inode
	diagMsgSockID = 4  // offset of the inet_diag_sockid in inet_diag_msg
	allTCPStates  = 0xffffffff
)

// errDiagUnavailable is returned when the kernel offers no
// NETLINK_SOCK_DIAG (or forbids it here): the tables are read instead.
var errDiagUnavailable = errors.New("NETLINK_SOCK_DIAG is not available")

// diagLookup asks the kernel for the TCP socket whose local address is
// client and whose remote address is server (the connection's other end).
func diagLookup(client, server netip.AddrPort) (Socket, error) {
	req := diagRequest(client, server)
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, unix.NETLINK_SOCK_DIAG)
	if err != nil {
		return Socket{}, fmt.Errorf("%w: %v", errDiagUnavailable, err)
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, req, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return Socket{}, fmt.Errorf("%w: sending the request: %v", errDiagUnavailable, err)
	}
	buf := make([]byte, 1024)
	for {
		n, _, err := unix.Recvfrom(fd, buf, 0)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return Socket{}, fmt.Errorf("reading the socket's description from the kernel: %w", err)
		}
		return parseDiagAnswer(buf[:n], client, server)
	}
}

// diagRequest is a netlink message asking for the one socket with the
// given addresses (an exact lookup, not a dump).
func diagRequest(client, server netip.AddrPort) []byte {
	b := make([]byte, nlmsgHdrLen+diagReqLen)
	ne := binary.NativeEndian
	ne.PutUint32(b[0:], uint32(len(b)))
	ne.PutUint16(b[4:], unix.SOCK_DIAG_BY_FAMILY)
	ne.PutUint16(b[6:], unix.NLM_F_REQUEST)
	ne.PutUint32(b[8:], 1) // sequence number
	r := b[nlmsgHdrLen:]
	family := byte(unix.AF_INET6)
	c, s := client.Addr(), server.Addr()
	if c.Unmap().Is4() && s.Unmap().Is4() {
		// A v4-mapped address names an IPv4 connection, which the kernel
		// finds in its IPv4 lookup whichever family its sockets are.
		family, c, s = unix.AF_INET, c.Unmap(), s.Unmap()
	}
	r[0] = family
	r[1] = unix.IPPROTO_TCP
	ne.PutUint32(r[4:], allTCPStates)
	id := r[8:]
	binary.BigEndian.PutUint16(id[0:], client.Port())
	binary.BigEndian.PutUint16(id[2:], server.Port())
	putAddr(id[4:20], c)
	putAddr(id[20:36], s)
	// id[36:40] is the interface (any); the cookie says "none known".
	ne.PutUint32(id[40:], 0xffffffff)
	ne.PutUint32(id[44:], 0xffffffff)
	return b
}

func putAddr(dst []byte, a netip.Addr) {
	if a.Is4() {
		v := a.As4()
		copy(dst, v[:])
		return
	}
	v := a.As16()
	copy(dst, v[:])
}

// parseDiagAnswer reads the kernel's answer: one inet_diag_msg, or an
// error (ENOENT when there is no such socket). The socket described must
// be the one asked for: client's local address, server's remote one.
func parseDiagAnswer(b []byte, client, server netip.AddrPort) (Socket, error) {
	if len(b) < nlmsgHdrLen {
		return Socket{}, fmt.Errorf("socket description: %d bytes, shorter than a netlink header", len(b))
	}
	ne := binary.NativeEndian
	msgLen := int(ne.Uint32(b[0:]))
	if msgLen < nlmsgHdrLen || msgLen > len(b) {
		return Socket{}, fmt.Errorf("socket description: netlink length %d of %d bytes read", msgLen, len(b))
	}
	body := b[nlmsgHdrLen:msgLen]
	switch typ := ne.Uint16(b[4:]); typ {
	case unix.NLMSG_ERROR:
		if len(body) < 4 {
			return Socket{}, fmt.Errorf("socket description: a netlink error of %d bytes", len(body))
		}
		errno := -int32(ne.Uint32(body))
		if unix.Errno(errno) == unix.ENOENT {
			return Socket{}, ErrNotFound
		}
		if errno == 0 {
			return Socket{}, fmt.Errorf("socket description: the kernel acknowledged the request without answering it")
		}
		return Socket{}, fmt.Errorf("socket description: %w", unix.Errno(errno))
	case unix.SOCK_DIAG_BY_FAMILY:
		if len(body) < diagMsgLen {
			return Socket{}, fmt.Errorf("socket description: %d bytes, want %d", len(body), diagMsgLen)
		}
		local, remote, err := diagAddrs(body[0], body[diagMsgSockID:diagMsgSockID+48])
		if err != nil {
			return Socket{}, err
		}
		if !sameEnd(local, client) || !sameEnd(remote, server) {
			return Socket{}, fmt.Errorf("socket description: the kernel described %s→%s, not the socket asked for (%s→%s)", local, remote, client, server)
		}
		return Socket{UID: int(ne.Uint32(body[diagMsgUID:])), Inode: uint64(ne.Uint32(body[diagMsgInode:]))}, nil
	default:
		return Socket{}, fmt.Errorf("socket description: unexpected netlink message type %d", typ)
	}
}

// diagAddrs reads an inet_diag_sockid's source and destination.
func diagAddrs(family byte, id []byte) (local, remote netip.AddrPort, err error) {
	lp, rp := binary.BigEndian.Uint16(id[0:]), binary.BigEndian.Uint16(id[2:])
	var la, ra netip.Addr
	switch family {
	case unix.AF_INET:
		la, ra = netip.AddrFrom4([4]byte(id[4:8])), netip.AddrFrom4([4]byte(id[20:24]))
	case unix.AF_INET6:
		la, ra = netip.AddrFrom16([16]byte(id[4:20])), netip.AddrFrom16([16]byte(id[20:36]))
	default:
		return local, remote, fmt.Errorf("socket description: address family %d, want IPv4 or IPv6", family)
	}
	return netip.AddrPortFrom(la, lp), netip.AddrPortFrom(ra, rp), nil
}

// sameEnd compares two ends, an IPv4 address and its v4-mapped form
// being the same (a dual-stack socket of an IPv4 connection).
func sameEnd(a, b netip.AddrPort) bool {
	return a.Port() == b.Port() && a.Addr().Unmap() == b.Addr().Unmap()
}
