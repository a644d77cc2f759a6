package peeruid

import (
	"fmt"
	"net/netip"
	"os"
)

// lookup finds the client's socket in the table of its address family (a
// v4-mapped address is in tcp6 when the server listens on both families,
// in tcp when not: both are read).
func lookup(server, client netip.AddrPort) (int, error) {
	tables := []string{"/proc/net/tcp6"}
	if server.Addr().Is4() || server.Addr().Is4In6() {
		tables = []string{"/proc/net/tcp", "/proc/net/tcp6"}
	}
	for _, table := range tables {
		c, s := client, server
		if table == "/proc/net/tcp" {
			c = netip.AddrPortFrom(c.Addr().Unmap(), c.Port())
			s = netip.AddrPortFrom(s.Addr().Unmap(), s.Port())
		}
		f, err := os.Open(table)
		if err != nil {
			return 0, fmt.Errorf("reading the socket table: %w", err)
		}
		uid, found, err := Find(f, c, s)
		f.Close()
		if err != nil {
			return 0, fmt.Errorf("%s: %w", table, err)
		}
		if found {
			return uid, nil
		}
	}
	return 0, ErrNotFound
}
