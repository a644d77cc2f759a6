// Package testredis runs a real redis-server (Debian's redis-server) for a
// test, on a loopback port of its own, persisting nothing; it is stopped
// when the test ends.
package testredis

import (
	"bufio"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// Server is a running redis-server.
type Server struct {
	Addr string // 127.0.0.1:port
	cmd  *exec.Cmd
	done chan struct{}
}

// URL is the server's redis:// URL (database 0).
func (s *Server) URL() string { return "redis://" + s.Addr + "/0" }

// Start starts redis-server; without it the test ends through
// testenv.Missing (a failure in CI).
func Start(t testing.TB) *Server {
	t.Helper()
	bin := testenv.LookPath(t, "redis-server")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	s := &Server{Addr: "127.0.0.1:" + strconv.Itoa(port), done: make(chan struct{})}
	s.cmd = exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", t.TempDir(), "--protected-mode", "yes")
	if err := s.cmd.Start(); err != nil {
		t.Fatalf("redis-server: %v", err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if ping(s.Addr) == nil {
			return s
		}
		select {
		case <-s.done:
			t.Fatalf("redis-server exited at start")
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("redis-server did not answer PING on %s", s.Addr)
	return nil
}

// Stop ends the server; it may be called more than once.
func (s *Server) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	_ = s.cmd.Process.Kill()
	<-s.done
}

// ping says PING in the inline protocol and expects +PONG.
func ping(addr string) error {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := fmt.Fprint(c, "PING\r\n"); err != nil {
		return err
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING: %q", line)
	}
	return nil
}

// VerifyNoGoroutines checks, when the test ends (call it before Start, so
// that it runs after the server and the clients are gone), that no
// goroutine is left. It waits up to 3s first: go-redis's reconnect probe,
// started after many failed dials, sleeps a second between dials and sees
// its client closed only when it wakes.
func VerifyNoGoroutines(t testing.TB) {
	t.Helper()
	t.Cleanup(func() {
		for deadline := time.Now().Add(3 * time.Second); goleak.Find() != nil && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
		}
		goleak.VerifyNone(t)
	})
}
