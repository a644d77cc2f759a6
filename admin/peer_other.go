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
