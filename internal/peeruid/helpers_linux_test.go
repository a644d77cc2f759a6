package peeruid

import (
	"net"
	"net/netip"
)

// LookupTables is Lookup reading /proc/net/tcp and /proc/net/tcp6, as
// Lookup does where NETLINK_SOCK_DIAG is not available.
func LookupTables(c net.Conn) (Socket, error) {
	l, r, err := loopbackEnds(c)
	if err != nil {
		return Socket{}, err
	}
	return lookupTables(l, r)
}

// lookupTables finds the client's socket in /proc/net/tcp{,6} alone.
func lookupTables(server, client netip.AddrPort) (Socket, error) {
	return shared.find(server, client)
}
