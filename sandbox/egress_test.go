package sandbox

import (
	"bufio"
	"net"
	"os"
	"strings"
	"testing"
)

// TestLaunchEgress starts a shell in a NetworkEgress sandbox: it reaches
// the listener the launcher hands the host (standing in for the proxy) at
// 127.0.0.1:ProxyPort in its own namespace, and nothing of the host's
// network, loopback included.
func TestLaunchEgress(t *testing.T) {
	self := launcher(t)
	s := Detect(self)
	if s.LandlockABI < 4 || !s.NetNS {
		t.Skipf("kernel: %s", s)
	}
	outside, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer outside.Close()
	host, child, err := EgressSocketPair()
	if err != nil {
		t.Fatal(err)
	}
	script := `exec 3<>/dev/tcp/127.0.0.1/3128 && echo ping >&3 && read x <&3 && echo "proxy:$x";
if exec 4<>/dev/tcp/` + strings.Replace(outside.Addr().String(), ":", "/", 1) + `; then echo "outside:reached"; else echo "outside:refused"; fi`
	cmd, err := Command(Launch{Launcher: self, Policy: Policy{Network: Network{Mode: NetworkEgress}}, Support: s,
		Binary: "/usr/bin/bash", Args: []string{"-c", script}, SocketDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	cmd.ExtraFiles = []*os.File{child}
	out := &strings.Builder{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	child.Close()
	ln, err := ReceiveListener(host)
	if err != nil {
		_ = cmd.Wait()
		t.Fatalf("%v; output: %s", err, out)
	}
	defer ln.Close()
	c, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(c).ReadString('\n')
	_, _ = c.Write([]byte("pong\n"))
	c.Close()
	if err := cmd.Wait(); err != nil {
		t.Logf("exit: %v", err)
	}
	if line != "ping\n" || !strings.Contains(out.String(), "proxy:pong") || !strings.Contains(out.String(), "outside:refused") {
		t.Fatalf("got %q from the plugin; its output:\n%s", line, out)
	}
}

func TestEgressEnforcement(t *testing.T) {
	p := Policy{Network: Network{Mode: NetworkEgress, Egress: []string{"api.github.com:443"}}}
	e := p.Enforcement(Support{LandlockABI: 7, NetNS: true, MountNS: true}, 1000)
	if e.String() != "enforced" || e.Egress != EgressNetNS {
		t.Errorf("with a network namespace: %s, %q", e, e.Egress)
	}
	e = p.Enforcement(Support{LandlockABI: 7, NetNSErr: "user namespaces are off", MountNS: true}, 1000)
	if e.String() != "partial (network not enforced)" || e.Egress != EgressLandlock || !strings.Contains(e.Gaps[0].Why, "UDP") {
		t.Errorf("without one: %s, %q, %v", e, e.Egress, e.Gaps)
	}
	if got := p.Network.String(); got != "egress: api.github.com:443" {
		t.Errorf("String() = %q", got)
	}
	if got := (Network{Mode: NetworkEgress}).String(); got != "egress: nothing" {
		t.Errorf("String() = %q", got)
	}
}
