//go:build unix

package sdk

import (
	"bufio"
	"io"
	"os"
	"regexp"
	"sync"

	"golang.org/x/sys/unix"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// protectHandshake makes fd 1 carry nothing but go-plugin's handshake line.
// It points fd 1 itself at stderr, so that whatever writes to fd 1 (cgo
// code, a child process inheriting stdout, a write to fd 1 by number) ends
// up on stderr instead of in the host's handshake reader; and it points
// os.Stdout, where go-plugin prints the line (and which go-plugin then
// replaces with its own stdout pipe), at a pipe of its own, whose reader
// sends the handshake line to a private duplicate of the real stdout and
// everything else to stderr. So Go code that prints to os.Stdout while
// go-plugin starts (a goroutine of the plugin, a library's banner) cannot
// corrupt the handshake either.
//
// It runs once: from the SDK's init when a host launched the process (so
// that the plugin's own init functions and main, which run after it, are
// covered too), else from Serve.
func protectHandshake() error {
	protectOnce.Do(func() { protectErr = protectStdout() })
	return protectErr
}

var (
	protectOnce sync.Once
	protectErr  error
)

// init protects stdout as soon as the SDK is initialised when a host
// launched the process (its handshake cookie is in the environment): what
// the plugin prints before it calls Serve then goes to stderr, where the
// host logs it, instead of into the handshake. Run by hand (`audit verify
// FILE`), a plugin binary keeps its stdout. A package the plugin imports
// that neither imports the SDK nor waits for it may be initialised first;
// what its init prints is not covered.
func init() {
	if os.Getenv(wire.Handshake.MagicCookieKey) == wire.Handshake.MagicCookieValue {
		_ = protectHandshake() // an error is reported by Serve
	}
}

func protectStdout() error {
	handshake, err := unix.Dup(1)
	if err != nil {
		return err
	}
	unix.CloseOnExec(handshake)
	if err := redirectFD(2, 1); err != nil {
		_ = unix.Close(handshake)
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		_ = unix.Close(handshake)
		return err
	}
	handshakeOut = os.NewFile(uintptr(handshake), "handshake")
	go forwardStdout(r, handshakeOut, os.Stderr)
	os.Stdout = w
	return nil
}

// handshakeOut is the real stdout, kept open (and referenced) for the life
// of the process: the host reads it until the plugin exits.
var handshakeOut *os.File

// handshakeLine finds go-plugin's handshake line: core protocol version,
// app protocol version, network, address, protocol, then the rest.
var handshakeLine = regexp.MustCompile(`\d+\|\d+\|(?:unix|tcp)\|[^|\n]*\|(?:grpc|netrpc)\|`)

// forwardStdout copies what is printed to os.Stdout before go-plugin takes
// it over: the first handshake line to handshake, everything else (and
// anything left before the handshake on its line) to stderr.
func forwardStdout(r io.Reader, handshake, stderr io.Writer) {
	br := bufio.NewReader(r)
	sent := false
	for {
		line, err := br.ReadString('\n')
		if line != "" {
			if loc := handshakeLine.FindStringIndex(line); !sent && loc != nil {
				if loc[0] > 0 {
					_, _ = io.WriteString(stderr, line[:loc[0]]+"\n")
				}
				_, _ = io.WriteString(handshake, line[loc[0]:])
				sent = true
			} else {
				_, _ = io.WriteString(stderr, line)
			}
		}
		if err != nil {
			return
		}
	}
}
