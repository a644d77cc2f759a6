//go:build !unix

package wire

import (
	"errors"
	"net"
	"os"
)

// LanePair is not available: call lanes are Unix socket pairs.
func LanePair() (host net.Conn, plugin *os.File, err error) {
	return nil, nil, errors.New("call lanes need Unix socket pairs")
}

// InheritedLanes finds none: a host passes lanes only on Unix.
func InheritedLanes() (calls, callbacks net.Conn, ok bool, err error) {
	return nil, nil, false, nil
}
