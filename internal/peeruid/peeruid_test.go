package peeruid

import (
	"net"
	"net/netip"
	"os"
	"runtime"
	"strings"
	"testing"
)

// TestOf: the uid of a loopback client of this process is this process's,
// over IPv4 and IPv6, found from the server's side of the connection.
func TestOf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	for _, addr := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(addr, func(t *testing.T) {
			ln, err := net.Listen("tcp", addr)
			if err != nil {
				t.Skipf("no %s here: %v", addr, err)
			}
			defer ln.Close()
			client, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer client.Close()
			server, err := ln.Accept()
			if err != nil {
				t.Fatal(err)
			}
			defer server.Close()
			uid, err := Of(server)
			if err != nil || uid != os.Getuid() {
				t.Fatalf("Of = %d, %v; want %d", uid, err, os.Getuid())
			}
			// The client's socket is held by this process alone.
			s, err := Lookup(server)
			if err != nil || s.Inode == 0 {
				t.Fatalf("Lookup = %+v, %v", s, err)
			}
			pids, err := s.Processes()
			if err != nil || len(pids) != 1 || pids[0] != os.Getpid() {
				t.Fatalf("Processes = %v, %v; want [%d]", pids, err, os.Getpid())
			}
			// Once the client has closed it, nobody holds it.
			client.Close()
			if pids, err := s.Processes(); err != ErrNoProcess {
				t.Fatalf("Processes after the client closed = %v, %v; want ErrNoProcess", pids, err)
			}
		})
	}
}

const table = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:2260 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1111 1 0000000000000000 100 0 0 10 0
   1: 0100007F:C350 0100007F:2260 01 00000000:00000000 00:00000000 00000000 65534        0 2222 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:2260 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 3333 1 0000000000000000 20 4 30 10 -1
`

// TestFind: the line whose local address is the client and remote the
// server gives the uid; the server's own line and other ports do not.
func TestFind(t *testing.T) {
	if procAddr(netip.MustParseAddrPort("127.0.0.1:8800")) != "0100007F:2260" {
		t.Skip("a big-endian machine writes addresses the other way round")
	}
	server := netip.MustParseAddrPort("127.0.0.1:8800")
	uid, found, err := Find(strings.NewReader(table), netip.MustParseAddrPort("127.0.0.1:50000"), server)
	if err != nil || !found || uid != 65534 {
		t.Fatalf("Find = %d %v %v, want 65534", uid, found, err)
	}
	s, found, err := FindSocket(strings.NewReader(table), netip.MustParseAddrPort("127.0.0.1:50000"), server)
	if err != nil || !found || s != (Socket{UID: 65534, Inode: 2222}) {
		t.Fatalf("FindSocket = %+v %v %v, want uid 65534 inode 2222", s, found, err)
	}
	if _, found, _ := Find(strings.NewReader(table), netip.MustParseAddrPort("127.0.0.1:50001"), server); found {
		t.Error("found a client that is not there")
	}
	if _, _, err := Find(strings.NewReader("header local_address\n0: short\n"), netip.MustParseAddrPort("127.0.0.1:1"), server); err == nil {
		t.Error("a malformed table was read")
	}
}

// FuzzFind: whatever the table holds, Find returns (a uid, not found, or
// an error) and never panics.
func FuzzFind(f *testing.F) {
	f.Add([]byte(table), "127.0.0.1:50000", "127.0.0.1:8800")
	f.Add([]byte("sl local_address\n 0: 00000000000000000000000001000000:2260 00000000000000000000000001000000:C350 01 0 0 0 1000 0\n"), "[::1]:8800", "[::1]:50000")
	f.Fuzz(func(t *testing.T, tbl []byte, client, server string) {
		c, err1 := netip.ParseAddrPort(client)
		s, err2 := netip.ParseAddrPort(server)
		if err1 != nil || err2 != nil {
			return
		}
		uid, found, err := Find(strings.NewReader(string(tbl)), c, s)
		if (err != nil || !found) && uid != 0 {
			t.Fatalf("uid %d with found %v, err %v", uid, found, err)
		}
	})
}
