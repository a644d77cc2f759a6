package admin

import (
	"errors"
	"fmt"
	"net"
	"os"

	"golang.org/x/sys/unix"

	"github.com/plugkit-go/plugkit/internal/lineage"
)

// checkPeer makes sure the process serving the admin socket is the host,
// before anything is sent to it: it runs as this user, it is no plugin of
// a host, and it is the process whose pid the host recorded beside the
// socket. A socket put in place of the host's would otherwise receive the
// call's arguments and answer with content of its own.
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
	return checkServer(cred, socket)
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

// checkClient refuses a connection to the admin socket from a plugin of
// any host, or from anything a plugin started (package lineage), before
// anything is read from it: a plugin that could reach the socket would
// otherwise call tools and answer approvals as the host's own user. A peer
// that cannot be identified is refused too.
func checkClient(c net.Conn) error {
	uc, ok := unwrapUnix(c)
	if !ok {
		return errors.New("not a Unix socket connection")
	}
	cred, err := peerCred(uc)
	if err != nil {
		return fmt.Errorf("cannot tell who connected: %w", err)
	}
	// The pid SO_PEERCRED gives is the one that connected; a pidfd taken
	// with it (Linux 6.5) makes sure the process checked is that one, not
	// another that got its pid after it exited.
	pidfd, pidfdErr := peerPidfd(uc)
	if pidfdErr == nil {
		defer unix.Close(pidfd)
	}
	if err := lineage.Check(int(cred.Pid)); err != nil {
		return err
	}
	if pidfdErr == nil {
		if err := unix.PidfdSendSignal(pidfd, 0, nil, 0); err != nil {
			return fmt.Errorf("process %d exited while it was checked", cred.Pid)
		}
	}
	return nil
}

func peerPidfd(c *net.UnixConn) (int, error) {
	raw, err := c.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var optErr error
	if err := raw.Control(func(s uintptr) {
		fd, optErr = unix.GetsockoptInt(int(s), unix.SOL_SOCKET, unix.SO_PEERPIDFD)
	}); err != nil {
		return -1, err
	}
	return fd, optErr
}

// checkServer refuses an admin socket served by a plugin of a host (one
// that replaced the host's socket), and one served by another process
// than the host that recorded its pid beside the socket (PidFile).
func checkServer(cred *unix.Ucred, socket string) error {
	if err := lineage.Check(int(cred.Pid)); err != nil {
		var pe *lineage.PluginError
		if errors.As(err, &pe) {
			return &ImpostorError{Socket: socket, PID: int(cred.Pid), Why: err.Error() + ", not a host"}
		}
		return &ImpostorError{Socket: socket, PID: int(cred.Pid), Why: err.Error()}
	}
	want, err := readPidFile(PidFile(socket))
	if err != nil {
		return &ImpostorError{Socket: socket, PID: int(cred.Pid), Why: err.Error()}
	}
	if want != int(cred.Pid) {
		return &ImpostorError{Socket: socket, PID: int(cred.Pid), Why: fmt.Sprintf("the host recorded pid %d in %s", want, PidFile(socket))}
	}
	return nil
}

func unwrapUnix(c net.Conn) (*net.UnixConn, bool) {
	for {
		if u, ok := c.(*net.UnixConn); ok {
			return u, true
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return nil, false
		}
		c = w.NetConn()
	}
}

// peerPID is the pid of the process that connected c.
func peerPID(c *net.UnixConn) (int, bool) {
	cred, err := peerCred(c)
	if err != nil {
		return 0, false
	}
	return int(cred.Pid), true
}
