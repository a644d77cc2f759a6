package httplimit

import (
	"fmt"
	"io"
	"net"
	"strconv"
	"time"

	"github.com/plugkit-go/plugkit/internal/peeruid"
)

// PeerOf names a TCP connection's peer by its address, and a loopback
// peer, whose address every local client shares, by its user when
// peeruid can tell it ("uid 1000"). A connection that is not TCP (a Unix
// socket) has no key: only the total bounds it. A connection of a Limits
// listener is looked up once (PeerSocket).
func PeerOf(c net.Conn) string {
	addr, ok := c.RemoteAddr().(*net.TCPAddr)
	if !ok {
		return ""
	}
	ip := addr.AddrPort().Addr().Unmap()
	if ip.IsLoopback() {
		if s, err := lookup(c); err == nil {
			return "uid " + strconv.Itoa(s.UID)
		}
	}
	return ip.String()
}

// PeerSocketer is a connection that has looked up its loopback client's
// socket, or will on the first ask, once for all who ask.
type PeerSocketer interface {
	PeerSocket() (peeruid.Socket, error)
}

func lookup(c net.Conn) (peeruid.Socket, error) {
	if ps, ok := c.(PeerSocketer); ok {
		return ps.PeerSocket()
	}
	return peeruid.Lookup(c)
}

// PeerSocket is peeruid.Lookup of the connection, done once: the bound per
// peer asks it when the connection is first read, and the front end's
// check of who connected (authn.Local) asks again for the same connection,
// which would otherwise be a second question to the kernel.
func (cc *cappedConn) PeerSocket() (peeruid.Socket, error) {
	cc.lookupOnce.Do(func() { cc.socket, cc.socketErr = peeruid.Lookup(cc.Conn) })
	return cc.socket, cc.socketErr
}

// Read admits the connection on its first call, from the connection's own
// goroutine: telling a loopback peer's user reads the socket table, which
// would slow every client if done in the accept loop. A refused
// connection's reads fail, which ends it.
func (cc *cappedConn) Read(b []byte) (int, error) {
	if cc.l.perPeer > 0 {
		cc.admit.Do(cc.admitPeer)
		if cc.refused {
			return 0, net.ErrClosed
		}
	}
	return cc.Conn.Read(b)
}

// admitWait is how long a connection over its peer's bound waits for one
// of the peer's to close or turn idle before it is refused: a client that
// opens a new connection as soon as it has read an answer may be a moment
// ahead of the server marking the old one idle.
const admitWait = 250 * time.Millisecond

// admitWaiters is how many connections of one peer over its bound wait
// admitWait at once; the others are refused without waiting.
const admitWaiters = 4

// admitPeer counts the connection for its peer, closing the peer's
// idle-longest connection when it is at its bound, or refuses it when
// none of the peer's turns idle within admitWait.
func (cc *cappedConn) admitPeer() {
	key := cc.l.peerKey(cc)
	if key == "" {
		return
	}
	c := cc.l
	deadline := time.Now().Add(admitWait)
	wake := time.AfterFunc(admitWait, func() {
		c.mu.Lock()
		c.cond.Broadcast()
		c.mu.Unlock()
	})
	defer wake.Stop()
	c.mu.Lock()
	waiting := false
	defer func() {
		if waiting {
			c.mu.Lock()
			if c.waiting[key]--; c.waiting[key] <= 0 {
				delete(c.waiting, key)
			}
			c.mu.Unlock()
		}
	}()
	for c.peers[key] >= c.perPeer && !cc.gone {
		oldest := c.oldestIdleOfLocked(key)
		if oldest == nil {
			// A few of the peer's connections wait for one of its own to
			// turn idle; more are refused at once, so that a flood of one
			// peer holds no more of the server's connections than its
			// bound and these few, and is turned away as fast as it comes.
			if !waiting && c.waiting[key] < admitWaiters {
				waiting = true
				c.waiting[key]++
			}
			if waiting && time.Now().Before(deadline) {
				c.cond.Wait()
				continue
			}
			n := c.peers[key]
			cc.refused = true
			c.mu.Unlock()
			cc.refuse(key, n)
			return
		}
		delete(c.idle, oldest)
		c.mu.Unlock()
		oldest.Close()
		c.mu.Lock()
	}
	if cc.gone {
		cc.refused = true
	} else {
		cc.key = key
		c.peers[key]++
	}
	c.mu.Unlock()
}

// leaveLocked uncounts a closing connection from its peer's.
func (c *capped) leaveLocked(cc *cappedConn) {
	if cc.key == "" {
		return
	}
	if c.peers[cc.key]--; c.peers[cc.key] <= 0 {
		delete(c.peers, cc.key)
	}
}

func (c *capped) oldestIdleOfLocked(key string) *cappedConn {
	var oldest *cappedConn
	var since time.Time
	for conn, t := range c.idle {
		if conn.key == key && (oldest == nil || t.Before(since)) {
			oldest, since = conn, t
		}
	}
	return oldest
}

// refuse answers 429 and closes the connection. The answer is written
// before anything is read; the write side is shut first and what the
// client already sent read for a moment, so that the close does not reset
// the connection before the client reads why (as net/http does).
func (cc *cappedConn) refuse(key string, held int) {
	if cc.l.onPeerRefused != nil {
		cc.l.onPeerRefused(key)
	}
	msg := fmt.Sprintf("too many connections from one client (%s): it holds %d, the most one client may hold at once; "+
		"finish or close some before opening another\n", key, held)
	_ = cc.Conn.SetDeadline(time.Now().Add(time.Second))
	fmt.Fprintf(cc.Conn, "HTTP/1.1 429 Too Many Requests\r\nContent-Type: text/plain; charset=utf-8\r\n"+
		"Connection: close\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s", len(msg), msg)
	// The moment is spent out of the cap, so that refusing a flood does
	// not hold places the server's other clients wait for; at most
	// maxLingering refused connections have it at once (the rest are
	// closed at once, and their client may see a reset rather than the
	// 429), which bounds the descriptors they hold.
	c := cc.l
	c.mu.Lock()
	linger := c.lingering < maxLingering
	if linger {
		c.lingering++
	}
	c.mu.Unlock()
	if cw, ok := cc.Conn.(interface{ CloseWrite() error }); ok && linger && cw.CloseWrite() == nil {
		cc.release()
		_ = cc.Conn.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
		_, _ = io.Copy(io.Discard, io.LimitReader(cc.Conn, 64<<10))
	}
	cc.Close()
	if linger {
		c.mu.Lock()
		c.lingering--
		c.mu.Unlock()
	}
}

// maxLingering bounds the refused connections given a moment, out of the
// connection cap, for their client to read why.
const maxLingering = 64
