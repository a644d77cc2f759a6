//go:build unix

package wire

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LanePair makes the two ends of a call lane: one the host keeps, as a
// connection, and one for the plugin to inherit (in exec.Cmd.ExtraFiles;
// close it once the plugin has started). Both are close-on-exec, so no
// other process the host starts inherits them.
func LanePair() (host net.Conn, plugin *os.File, err error) {
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("call lane: socketpair: %w", err)
	}
	hf := os.NewFile(uintptr(fds[0]), "call-lane")
	defer hf.Close() // FileConn has its own duplicate
	host, err = net.FileConn(hf)
	if err != nil {
		unix.Close(fds[1])
		return nil, nil, fmt.Errorf("call lane: %w", err)
	}
	return host, os.NewFile(uintptr(fds[1]), "call-lane"), nil
}

// InheritedLanes opens the two call lanes EnvCallLanes names, as
// connections, and closes the inherited descriptors (the connections hold
// close-on-exec duplicates, so processes the plugin starts do not inherit
// them). ok is false when the host passed none.
func InheritedLanes() (calls, callbacks net.Conn, ok bool, err error) {
	v := os.Getenv(EnvCallLanes)
	if v == "" {
		return nil, nil, false, nil
	}
	a, b, found := strings.Cut(v, ",")
	if !found {
		return nil, nil, false, fmt.Errorf("%s=%q: want two file descriptors, \"3,4\"", EnvCallLanes, v)
	}
	var conns []net.Conn
	for _, s := range []string{a, b} {
		fd, err := strconv.Atoi(s)
		if err != nil || fd < 3 {
			_ = closeAll(conns)
			return nil, nil, false, fmt.Errorf("%s=%q: %q is not an inherited file descriptor", EnvCallLanes, v, s)
		}
		f := os.NewFile(uintptr(fd), "call-lane")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			_ = closeAll(conns)
			return nil, nil, false, fmt.Errorf("%s: file descriptor %d: %w", EnvCallLanes, fd, err)
		}
		conns = append(conns, c)
	}
	return conns[0], conns[1], true, nil
}

func closeAll(conns []net.Conn) error {
	var errs []error
	for _, c := range conns {
		errs = append(errs, c.Close())
	}
	return errors.Join(errs...)
}
