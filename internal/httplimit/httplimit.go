// Package httplimit bounds what one HTTP client can hold of a server: how
// many connections it serves at once, how long a client may take to send a
// request's headers and its body, how long an idle keep-alive connection
// stays open, and how large a body may be. The host's two HTTP servers (the
// admin API and MCP over streamable HTTP) are built with it, so that
// clients that connect and never finish a request (a slow-loris attack)
// cannot use up the host's file descriptors.
//
// Only the request is bounded in time: a response may stream for as long as
// its handler runs (a call waiting for an approval, an MCP event stream).
package httplimit

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/plugkit-go/plugkit/internal/peeruid"
)

// Limits bound one server. A zero field takes its default.
type Limits struct {
	// MaxConns is how many connections are served at once; more wait, not
	// yet accepted, in the kernel's backlog (they hold no descriptor of
	// the host's), unless an idle one can be closed for them. Default 64.
	MaxConns int
	// HeaderTimeout bounds the time from a connection's accept (or the end
	// of its previous request) to the end of a request's headers. Default 10s.
	HeaderTimeout time.Duration
	// BodyTimeout bounds the time to receive a request's body once its
	// headers are in. Default 30s.
	BodyTimeout time.Duration
	// IdleTimeout closes a keep-alive connection that sends no new request.
	// Default 30s.
	IdleTimeout time.Duration
	// MaxBodyBytes is the largest request body accepted. Default 4 MiB.
	MaxBodyBytes int64
	// BodyLimit, when set, may bound a request's body below MaxBodyBytes
	// (a request whose size the server can tell from its path, such as
	// a call's arguments); 0 or more than MaxBodyBytes leaves
	// MaxBodyBytes. It is asked before the body is read.
	BodyLimit func(r *http.Request) int64
	// MaxConnsPerPeer is how many of the MaxConns connections one peer
	// (PeerKey) may hold at once; 0: no bound per peer. A peer at its
	// bound has its idle-longest connection closed for a new one; when
	// none is idle, the new one is answered 429 and closed, so that one
	// peer's unfinished requests leave the rest of MaxConns to the others.
	MaxConnsPerPeer int
	// PeerKey names a connection's peer for MaxConnsPerPeer; "" bounds it
	// by the total only. Default PeerOf.
	PeerKey func(net.Conn) string
	// OnPeerRefused, when set, is told of each connection refused for its
	// peer's bound (the peer's key); it must not block.
	OnPeerRefused func(peer string)
	// Refuse writes the answer to a request refused for its body (too
	// large: 413, too slow: 408); default http.Error with msg.
	Refuse func(w http.ResponseWriter, r *http.Request, code int, msg string)
}

// Defaults.
const (
	DefaultMaxConns      = 64
	DefaultHeaderTimeout = 10 * time.Second
	DefaultBodyTimeout   = 30 * time.Second
	DefaultIdleTimeout   = 30 * time.Second
	DefaultMaxBodyBytes  = 4 << 20
)

func (l Limits) withDefaults() Limits {
	if l.MaxConns <= 0 {
		l.MaxConns = DefaultMaxConns
	}
	if l.HeaderTimeout <= 0 {
		l.HeaderTimeout = DefaultHeaderTimeout
	}
	if l.BodyTimeout <= 0 {
		l.BodyTimeout = DefaultBodyTimeout
	}
	if l.IdleTimeout <= 0 {
		l.IdleTimeout = DefaultIdleTimeout
	}
	if l.MaxBodyBytes <= 0 {
		l.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if l.PeerKey == nil {
		l.PeerKey = PeerOf
	}
	if l.Refuse == nil {
		l.Refuse = func(w http.ResponseWriter, _ *http.Request, code int, msg string) { http.Error(w, msg, code) }
	}
	return l
}

// Server returns an http.Server for h with the header and idle timeouts,
// and h behind Body.
//
// It sets no ReadTimeout: net/http applies that to the whole connection,
// and a read deadline that passes while a handler streams its response
// cancels the request's context (the background read that watches for the
// client going away fails), which would end a long call or an MCP event
// stream. Body bounds the body instead, then lifts its deadline.
func (l Limits) Server(h http.Handler) *http.Server {
	l = l.withDefaults()
	return &http.Server{
		Handler:           l.Body(h),
		ReadHeaderTimeout: l.HeaderTimeout,
		IdleTimeout:       l.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
	}
}

// Listener caps ln at MaxConns connections served at once by srv. When it
// is full, the connection of srv idle longest (a keep-alive connection
// between requests) is closed to make room; when none is idle, a new
// connection waits, not yet accepted, until one closes. It sets
// srv.ConnState to follow which connections are idle.
func (l Limits) Listener(srv *http.Server, ln net.Listener) net.Listener {
	l = l.withDefaults()
	c := &capped{Listener: ln, max: l.MaxConns, idle: map[*cappedConn]time.Time{},
		perPeer: l.MaxConnsPerPeer, peerKey: l.PeerKey, onPeerRefused: l.OnPeerRefused, peers: map[string]int{}, waiting: map[string]int{}}
	c.cond = sync.NewCond(&c.mu)
	srv.ConnState = c.state
	return c
}

// capped is Listener's listener.
type capped struct {
	net.Listener
	max int
	// perPeer bounds the connections of one peer (peer.go).
	perPeer       int
	peerKey       func(net.Conn) string
	onPeerRefused func(string)

	mu    sync.Mutex
	peers map[string]int // open connections of each peer admitted
	// waiting counts each peer's connections waiting to be admitted.
	waiting map[string]int
	// lingering counts refused connections, out of the cap, whose
	// client is given a moment to read its 429 (peer.go).
	lingering int
	cond      *sync.Cond // signalled when a connection closes or turns idle
	open      int
	idle      map[*cappedConn]time.Time // since when
	closed    bool
}

func (c *capped) Accept() (net.Conn, error) {
	c.mu.Lock()
	for c.open >= c.max && !c.closed {
		if oldest := c.oldestIdleLocked(); oldest != nil {
			delete(c.idle, oldest)
			c.mu.Unlock()
			oldest.Close()
			c.mu.Lock()
			continue
		}
		c.cond.Wait()
	}
	if c.closed {
		c.mu.Unlock()
		return nil, net.ErrClosed
	}
	c.open++
	c.mu.Unlock()
	conn, err := c.Listener.Accept()
	if err != nil {
		c.mu.Lock()
		c.open--
		c.cond.Broadcast()
		c.mu.Unlock()
		return nil, err
	}
	return &cappedConn{Conn: conn, l: c}, nil
}

func (c *capped) oldestIdleLocked() *cappedConn {
	var oldest *cappedConn
	var since time.Time
	for conn, t := range c.idle {
		if oldest == nil || t.Before(since) {
			oldest, since = conn, t
		}
	}
	return oldest
}

func (c *capped) Close() error {
	err := c.Listener.Close()
	c.mu.Lock()
	c.closed = true
	c.cond.Broadcast()
	c.mu.Unlock()
	return err
}

// state follows srv's connections: only an idle one may be closed to make
// room.
func (c *capped) state(conn net.Conn, st http.ConnState) {
	cc, ok := conn.(*cappedConn)
	if !ok {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if st == http.StateIdle {
		c.idle[cc] = time.Now()
		c.cond.Broadcast()
	} else {
		delete(c.idle, cc)
	}
}

type cappedConn struct {
	net.Conn
	l    *capped
	once sync.Once

	admit   sync.Once // on its first Read (peer.go)
	refused bool      // over its peer's bound
	key     string    // its peer, once counted in l.peers
	gone    bool      // closed (under l.mu)

	lookupOnce sync.Once // PeerSocket (peer.go)
	socket     peeruid.Socket
	socketErr  error
}

// NetConn is the connection underneath, as tls.Conn's NetConn: for what
// only the socket knows (a Unix socket's peer credentials).
func (cc *cappedConn) NetConn() net.Conn { return cc.Conn }

// Close releases the connection's place only once its descriptor is
// closed, so that the cap bounds descriptors and not just connections the
// server still thinks about.
func (cc *cappedConn) Close() error {
	err := cc.Conn.Close()
	cc.release()
	return err
}

// release gives up the connection's place, once.
func (cc *cappedConn) release() {
	cc.once.Do(func() {
		cc.l.mu.Lock()
		cc.l.open--
		cc.gone = true
		cc.l.leaveLocked(cc)
		delete(cc.l.idle, cc)
		cc.l.cond.Broadcast()
		cc.l.mu.Unlock()
	})
}

// Body reads a request's whole body before next runs, within BodyTimeout
// and MaxBodyBytes; a body too large is refused with 413, one not sent in
// time with 408. next gets the body from memory.
func (l Limits) Body(next http.Handler) http.Handler {
	l = l.withDefaults()
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Body == nil || r.Body == http.NoBody {
			next.ServeHTTP(w, r)
			return
		}
		limit := l.MaxBodyBytes
		if l.BodyLimit != nil {
			if n := l.BodyLimit(r); n > 0 && n < limit {
				limit = n
			}
		}
		if r.ContentLength > limit {
			closeAfter(w)
			l.Refuse(w, r, http.StatusRequestEntityTooLarge, tooLarge(r.ContentLength, limit))
			return
		}
		rc := http.NewResponseController(w)
		// Without a deadline on the connection (a test's recorder), the
		// size limit still holds.
		_ = rc.SetReadDeadline(time.Now().Add(l.BodyTimeout))
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
		var tooBig *http.MaxBytesError
		switch {
		case errors.As(err, &tooBig):
			l.Refuse(w, r, http.StatusRequestEntityTooLarge, tooLarge(-1, limit))
			return
		case errors.Is(err, os.ErrDeadlineExceeded):
			closeAfter(w)
			l.Refuse(w, r, http.StatusRequestTimeout, fmt.Sprintf("the request body was not received within %s", l.BodyTimeout))
			return
		case err != nil:
			// The client went away mid-body: nobody reads an answer.
			closeAfter(w)
			return
		}
		_ = rc.SetReadDeadline(time.Time{})
		r.Body = io.NopCloser(bytes.NewReader(body))
		next.ServeHTTP(w, r)
	})
}

func tooLarge(n, limit int64) string {
	if n >= 0 {
		return fmt.Sprintf("the request body (%d bytes) is larger than the limit of %d bytes", n, limit)
	}
	return fmt.Sprintf("the request body is larger than the limit of %d bytes", limit)
}

// closeAfter closes the connection once the answer is written, rather than
// reading what is left of a body nobody wants. Call it before writing.
func closeAfter(w http.ResponseWriter) {
	w.Header().Set("Connection", "close")
}
