//go:build !linux

package wire

import (
	"io"
	"net"
)

// laneIO is conn's own Read and Write where raw system calls are not used.
func laneIO(conn net.Conn) (io.Reader, func([]byte) error) {
	return conn, writeAll(conn)
}
