package peeruid

import (
	"io"
	"net"
	"net/netip"
	"strings"
)

// What the tests ask of this package beyond what the host does.

// Of returns the uid of the process that opened the other end of c, a
// loopback TCP connection accepted by this process.
func Of(c net.Conn) (int, error) {
	s, err := Lookup(c)
	return s.UID, err
}

// Find reads a /proc/net/tcp or /proc/net/tcp6 table from r and returns
// the uid of the socket whose local address is client and whose remote
// address is server; found is false when there is none.
func Find(r io.Reader, client, server netip.AddrPort) (uid int, found bool, err error) {
	s, found, err := FindSocket(r, client, server)
	return s.UID, found, err
}

// FindSocket is Find returning the socket's inode too. A line that is not
// of the table's shape is an error; nothing of the table is trusted
// further than its columns.
func FindSocket(r io.Reader, client, server netip.AddrPort) (s Socket, found bool, err error) {
	wantLocal, wantRemote := procAddr(client), procAddr(server)
	err = scanTable(r, func(line string, f []string) (bool, error) {
		if !strings.EqualFold(f[1], wantLocal) || !strings.EqualFold(f[2], wantRemote) {
			return true, nil
		}
		s, err = socketOf(line, f)
		found = err == nil
		return false, err
	})
	return s, found, err
}
