//go:build !linux

package admin

import (
	"fmt"
	"net"
	"runtime"
)

// checkPeer refuses to talk to the admin socket where its owner cannot be
// checked (SO_PEERCRED is Linux's): see peer_linux.go.
func checkPeer(_ net.Conn, socket string) error {
	return fmt.Errorf("admin socket %s: cannot check who serves it on %s", socket, runtime.GOOS)
}

// peerUID cannot tell the peer's uid here: calls over the admin socket
// have no principal.
func peerUID(*net.UnixConn) (int, bool) { return 0, false }

// checkClient cannot tell whether a peer is a plugin here: the admin API
// refuses every connection rather than serve one (see peer_linux.go).
func checkClient(net.Conn) error {
	return fmt.Errorf("cannot check who connected on %s", runtime.GOOS)
}

// peerPID cannot tell the peer's pid here.
func peerPID(*net.UnixConn) (int, bool) { return 0, false }
