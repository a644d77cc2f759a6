package lineage

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"testing"

	"github.com/plugkit-go/plugkit/internal/peeruid"
)

// loopback returns both ends of a loopback connection, closed when the
// test or benchmark ends.
func loopback(tb testing.TB) (client, server net.Conn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { client.Close() })
	server, err = ln.Accept()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { server.Close() })
	return client, server
}

// TestPeersVet: a client that is no plugin is cleared, and remembered; a
// socket it shares with a plugin (a child of a registered host that
// inherited it) is refused, whether the client was cleared before (the
// socket found among its descendants) or not (every process read); a
// socket nobody holds is refused as unknown.
func TestPeersVet(t *testing.T) {
	t.Setenv("TMPDIR", t.TempDir()) // a registry of this test's own
	var p Peers
	_, server := loopback(t)
	s, err := peeruid.Lookup(server)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Vet(s); err != nil {
		t.Fatalf("Vet(this test's own socket) = %v", err)
	}
	if pids := p.recentPIDs(); len(pids) != 1 || pids[0] != os.Getpid() {
		t.Fatalf("recent clients %v, want this process", pids)
	}

	// This process becomes a host: a child it starts is its plugin.
	unregister, err := Register("")
	if err != nil {
		t.Fatal(err)
	}
	defer unregister()
	client, server := loopback(t)
	s, err = peeruid.Lookup(server)
	if err != nil {
		t.Fatal(err)
	}
	f, err := client.(*net.TCPConn).File()
	if err != nil {
		t.Fatal(err)
	}
	plugin := exec.Command("sleep", "60")
	plugin.ExtraFiles = []*os.File{f}
	if err := plugin.Start(); err != nil {
		t.Fatal(err)
	}
	f.Close()
	defer func() { plugin.Process.Kill(); plugin.Wait() }()
	for name, peers := range map[string]*Peers{"cleared before": &p, "first seen": new(Peers)} {
		var pe *PluginError
		if err := peers.Vet(s); !errors.As(err, &pe) || pe.PID != plugin.Process.Pid {
			t.Errorf("%s: Vet(a socket a plugin shares) = %v, want refused naming process %d", name, err, plugin.Process.Pid)
		}
	}

	// A socket no process holds.
	if err := p.Vet(peeruid.Socket{UID: os.Getuid(), Inode: 0}); !errors.Is(err, ErrUnknownProcess) {
		t.Errorf("Vet(a socket nobody holds) = %v, want ErrUnknownProcess", err)
	}
}

// BenchmarkPeerLookup: what vetting a new loopback connection costs: its
// client socket's uid and inode, the processes holding it, and whether
// any is a plugin. "scan" is how it was done before (the socket table
// read, every process's descriptors read, Check run); "cached" is Lookup
// over NETLINK_SOCK_DIAG and Peers, with the client known from its
// earlier connections. Each iteration vets a new connection, closed
// before the next (outside the timing).
func BenchmarkPeerLookup(b *testing.B) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	defer ln.Close()
	connect := func(b *testing.B) (client, server net.Conn) {
		b.StopTimer()
		defer b.StartTimer()
		client, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			b.Fatal(err)
		}
		server, err = ln.Accept()
		if err != nil {
			b.Fatal(err)
		}
		return client, server
	}
	hangUp := func(b *testing.B, client, server net.Conn) {
		b.StopTimer()
		defer b.StartTimer()
		client.Close()
		server.Close()
	}
	b.Run("scan", func(b *testing.B) {
		for b.Loop() {
			client, server := connect(b)
			s, err := peeruid.Lookup(server)
			if err != nil {
				b.Fatal(err)
			}
			pids, err := s.Processes()
			if err != nil {
				b.Fatal(err)
			}
			for _, pid := range pids {
				if err := Check(pid); err != nil {
					b.Fatal(err)
				}
			}
			hangUp(b, client, server)
		}
	})
	// "cached" looks the socket up once per connection, as the front end
	// does now that the listener's bound per peer and the check of who
	// connected share the lookup; "cached-two-lookups" asks the kernel
	// twice, as the two did each for itself before.
	for _, lookups := range []int{1, 2} {
		name := "cached"
		if lookups == 2 {
			name = "cached-two-lookups"
		}
		b.Run(name, func(b *testing.B) {
			var p Peers
			for b.Loop() {
				client, server := connect(b)
				var s peeruid.Socket
				for range lookups {
					if s, err = peeruid.Lookup(server); err != nil {
						b.Fatal(err)
					}
				}
				if err := p.Vet(s); err != nil {
					b.Fatal(err)
				}
				hangUp(b, client, server)
			}
		})
	}
}
