//go:build unix

package sdk

import (
	"os"

	"golang.org/x/sys/unix"
)

// protectHandshake makes fd 1 carry nothing but go-plugin's handshake line.
// It keeps a private duplicate of fd 1 as os.Stdout, where go-plugin prints
// the line (and which go-plugin then replaces with its own stdout pipe), and
// points fd 1 itself at stderr, so that whatever else writes to fd 1 (cgo
// code, a child process inheriting stdout, a write to fd 1 by number) ends up
// on stderr instead of in the host's handshake reader.
func protectHandshake() error {
	handshake, err := unix.Dup(1)
	if err != nil {
		return err
	}
	unix.CloseOnExec(handshake)
	if err := redirectFD(2, 1); err != nil {
		_ = unix.Close(handshake)
		return err
	}
	os.Stdout = os.NewFile(uintptr(handshake), "handshake")
	return nil
}
