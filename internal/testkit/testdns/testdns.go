// Package testdns runs a DNS server for tests on 127.0.0.1: it answers A
// and AAAA questions from a function told how many times each name was
// asked, so a test can make a name's answer change between queries.
package testdns

import (
	"context"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/miekg/dns"
)

// Answer returns the addresses of name (lower case, no trailing dot) on
// its nth query (from 1) of one type (A or AAAA: of what it returns, the
// addresses of that type are answered); none makes the answer empty.
type Answer func(name string, n int) []netip.Addr

// Server is a running test DNS server.
type Server struct {
	// Addr is its address (UDP and TCP): host:port.
	Addr string

	mu      sync.Mutex
	queries map[string]int
}

// Start runs a server answering with answer until the test ends.
func Start(t testing.TB, answer Answer) *Server {
	t.Helper()
	// The UDP port the kernel picks may be taken for TCP by another
	// process: pick again a few times before giving up.
	var (
		pc  net.PacketConn
		ln  net.Listener
		err error
	)
	for range 20 {
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatalf("test DNS: %v", err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		t.Fatalf("test DNS: %v", err)
	}
	s := &Server{Addr: pc.LocalAddr().String(), queries: map[string]int{}}
	h := dns.HandlerFunc(func(w dns.ResponseWriter, req *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(req)
		m.Authoritative = true
		for _, q := range req.Question {
			name := strings.TrimSuffix(strings.ToLower(q.Name), ".")
			if q.Qtype != dns.TypeA && q.Qtype != dns.TypeAAAA {
				continue
			}
			s.mu.Lock()
			key := name + "/" + dns.TypeToString[q.Qtype]
			s.queries[key]++
			n := s.queries[key]
			s.mu.Unlock()
			for _, a := range answer(name, n) {
				hdr := dns.RR_Header{Name: q.Name, Class: dns.ClassINET, Ttl: 0}
				switch {
				case a.Is4() && q.Qtype == dns.TypeA:
					hdr.Rrtype = dns.TypeA
					m.Answer = append(m.Answer, &dns.A{Hdr: hdr, A: a.AsSlice()})
				case a.Is6() && q.Qtype == dns.TypeAAAA:
					hdr.Rrtype = dns.TypeAAAA
					m.Answer = append(m.Answer, &dns.AAAA{Hdr: hdr, AAAA: a.AsSlice()})
				}
			}
		}
		_ = w.WriteMsg(m)
	})
	udp := &dns.Server{PacketConn: pc, Handler: h}
	tcp := &dns.Server{Listener: ln, Handler: h}
	var wg sync.WaitGroup
	for _, srv := range []*dns.Server{udp, tcp} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = srv.ActivateAndServe()
		}()
		<-started
	}
	t.Cleanup(func() {
		_ = udp.Shutdown()
		_ = tcp.Shutdown()
		wg.Wait()
	})
	return s
}

// Queries is how many A questions name was asked.
func (s *Server) Queries(name string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.queries[name+"/A"]
}

// Resolver is a resolver that asks only the server at addr.
func Resolver(addr string) *net.Resolver {
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, network, addr)
		},
	}
}
