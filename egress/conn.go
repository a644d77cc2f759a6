package egress

import (
	"bufio"
	"bytes"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// counted counts the bytes written to and read from a connection.
type counted struct {
	net.Conn
	in, out atomic.Int64
}

func (c *counted) Read(b []byte) (int, error) {
	n, err := c.Conn.Read(b)
	c.in.Add(int64(n))
	return n, err
}

func (c *counted) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.out.Add(int64(n))
	return n, err
}

func (c *counted) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// recordTLSHandshake is the first byte of a TLS record holding a handshake
// message: how a ClientHello starts.
const recordTLSHandshake = 0x16

// errBadHello is a tunnel's first TLS record that is no ClientHello.
var errBadHello = errors.New("the first TLS record is not a readable ClientHello")

// errHello stops the handshake once the ClientHello is read.
var errHello = errors.New("client hello read")

// peekServerName reads the first bytes the plugin sends through a tunnel:
// when they start a TLS record, the whole ClientHello, whose server name
// (SNI) it returns. first is every byte read, to pass on.
func peekServerName(br *bufio.Reader) (first []byte, sni string, isTLS bool, err error) {
	b, err := br.Peek(1)
	if err != nil {
		return nil, "", false, err
	}
	if b[0] != recordTLSHandshake {
		// Not TLS: pass on what the reader holds, without waiting for
		// more (a protocol whose first message is short).
		first = make([]byte, br.Buffered())
		_, _ = io.ReadFull(br, first)
		return first, "", false, nil
	}
	var seen bytes.Buffer
	var hello *tls.ClientHelloInfo
	srv := tls.Server(helloConn{r: io.TeeReader(br, &seen)}, &tls.Config{
		GetConfigForClient: func(h *tls.ClientHelloInfo) (*tls.Config, error) {
			hello = h
			return nil, errHello
		},
	})
	_ = srv.Handshake()
	if hello == nil {
		// A handshake record crypto/tls cannot read as a ClientHello:
		// its name cannot be checked, so it does not pass.
		return seen.Bytes(), "", true, errBadHello
	}
	return seen.Bytes(), hello.ServerName, true, nil
}

// helloConn is a read-only connection for crypto/tls to read a ClientHello
// from; what it would write (an alert) goes nowhere.
type helloConn struct {
	r io.Reader
}

func (c helloConn) Read(b []byte) (int, error)         { return c.r.Read(b) }
func (c helloConn) Write(b []byte) (int, error)        { return len(b), nil }
func (c helloConn) Close() error                       { return nil }
func (c helloConn) LocalAddr() net.Addr                { return nil }
func (c helloConn) RemoteAddr() net.Addr               { return nil }
func (c helloConn) SetDeadline(t time.Time) error      { return nil }
func (c helloConn) SetReadDeadline(t time.Time) error  { return nil }
func (c helloConn) SetWriteDeadline(t time.Time) error { return nil }
