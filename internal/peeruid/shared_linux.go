package peeruid

import (
	"fmt"
	"net/netip"
	"os"
	"strings"
	"sync"
)

// The socket tables are read once for every lookup waiting, not once per
// lookup: under a flood of connections (5,000 stalled requests of another
// user), the table is as long as the flood, and a read per connection
// made the host's own user's connection wait behind tens of seconds of
// reads. A lookup uses the first read that began after it did, so the
// socket of an accepted connection is in it (unless the client has gone).
var shared = func() *tables {
	t := &tables{}
	t.cond = sync.NewCond(&t.mu)
	return t
}()

type tables struct {
	mu      sync.Mutex
	cond    *sync.Cond
	started uint64 // reads begun
	reading bool
	last    *tableRead
}

// tableRead is one read of both tables: each socket by its local and
// remote address, as the tables write them.
type tableRead struct {
	n       uint64 // which read it was
	sockets map[string]Socket
	err     error
}

// find returns the socket whose local address is client and remote
// address server, from a read that began after the call.
func (t *tables) find(server, client netip.AddrPort) (Socket, error) {
	keys := []string{procAddr(client) + " " + procAddr(server)}
	if client.Addr().Is4In6() || server.Addr().Is4In6() {
		// A v4-mapped address is in tcp6 when the server listens on both
		// families, in tcp when not.
		c := netip.AddrPortFrom(client.Addr().Unmap(), client.Port())
		s := netip.AddrPortFrom(server.Addr().Unmap(), server.Port())
		keys = append(keys, procAddr(c)+" "+procAddr(s))
	}
	t.mu.Lock()
	after := t.started
	for t.last == nil || t.last.n <= after {
		if t.reading {
			t.cond.Wait()
			continue
		}
		t.reading = true
		t.started++
		n := t.started
		t.mu.Unlock()
		r := readTables(n)
		t.mu.Lock()
		t.last, t.reading = r, false
		t.cond.Broadcast()
	}
	r := t.last
	t.mu.Unlock()
	if r.err != nil {
		return Socket{}, r.err
	}
	for _, k := range keys {
		if s, ok := r.sockets[k]; ok {
			return s, nil
		}
	}
	return Socket{}, ErrNotFound
}

func readTables(n uint64) *tableRead {
	defer readProc()()
	r := &tableRead{n: n, sockets: map[string]Socket{}}
	for _, table := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(table)
		if os.IsNotExist(err) && table == "/proc/net/tcp6" {
			continue // no IPv6
		}
		if err != nil {
			r.err = fmt.Errorf("reading the socket table: %w", err)
			return r
		}
		err = readTable(f, r.sockets)
		f.Close()
		if err != nil {
			r.err = fmt.Errorf("%s: %w", table, err)
			return r
		}
	}
	return r
}

// readTable adds every socket of a table to into, keyed "local remote" in
// the table's own upper-case form. A line that is not of the table's shape
// is an error, as in FindSocket.
func readTable(f *os.File, into map[string]Socket) error {
	return scanTable(f, func(line string, fs []string) (bool, error) {
		s, err := socketOf(line, fs)
		if err != nil {
			return false, err
		}
		into[strings.ToUpper(fs[1])+" "+strings.ToUpper(fs[2])] = s
		return true, nil
	})
}
