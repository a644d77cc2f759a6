package admin

import (
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"
)

// checkPeer makes sure the process serving the admin socket runs as this
// user, before anything is sent to it: a socket another user put in place
// of the host's would otherwise receive the call's arguments and answer
// with content of its own.
func checkPeer(c net.Conn, socket string) error {
	uc, ok := c.(*net.UnixConn)
	if !ok {
		return fmt.Errorf("admin socket %s is not a Unix socket", socket)
	}
	cred, err := peerCred(uc)
	if err != nil {
		return fmt.Errorf("admin socket %s: cannot tell who serves it: %w", socket, err)
	}
	if me := os.Geteuid(); int(cred.Uid) != me {
		return &PeerError{Socket: socket, UID: int(cred.Uid), PID: int(cred.Pid), Me: me}
	}
	return nil
}

// peerCred is the credentials of the process at the other end of c
// (SO_PEERCRED): the kernel's word, which the peer cannot choose.
func peerCred(c *net.UnixConn) (*unix.Ucred, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return nil, err
	}
	var cred *unix.Ucred
	var credErr error
	if err := raw.Control(func(fd uintptr) {
		cred, credErr = unix.GetsockoptUcred(int(fd), unix.SOL_SOCKET, unix.SO_PEERCRED)
	}); err != nil {
		return nil, err
	}
	return cred, credErr
}

// peerUID is the uid of the process at the other end of c.
func peerUID(c *net.UnixConn) (int, bool) {
	cred, err := peerCred(c)
	if err != nil {
		return 0, false
	}
	return int(cred.Uid), true
}
