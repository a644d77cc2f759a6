package httplimit_test

import (
	"net"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/internal/peeruid"
)

// TestPeerSocketOnce: a loopback connection accepted by a Limits listener
// names its client's socket to whoever asks (the per-peer bound, then the
// front end's check of who connected), the one the kernel describes for
// it: this process's user, and an inode.
func TestPeerSocketOnce(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) })
	raw, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := httplimit.Limits{MaxConns: 4, MaxConnsPerPeer: 2}.Listener(&http.Server{}, raw)
	defer ln.Close()
	client, err := net.DialTimeout("tcp", raw.Addr().String(), 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ps, ok := c.(httplimit.PeerSocketer)
	if !ok {
		t.Fatalf("the listener's connection (%T) does not name its client's socket", c)
	}
	want, err := peeruid.Lookup(c)
	if err != nil {
		t.Fatal(err)
	}
	if got := httplimit.PeerOf(c); got != "uid "+strconv.Itoa(os.Getuid()) {
		t.Errorf("PeerOf = %q, want this process's uid %d", got, os.Getuid())
	}
	for range 2 {
		got, err := ps.PeerSocket()
		if err != nil || got != want {
			t.Errorf("PeerSocket() = %+v, %v; want %+v", got, err, want)
		}
	}
	if want.UID != os.Getuid() || want.Inode == 0 {
		t.Errorf("the client's socket is %+v, want uid %d and an inode", want, os.Getuid())
	}
}
