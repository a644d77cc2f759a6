package peeruid

import (
	"net"
	"os"
	"runtime"
	"sync"
	"testing"
)

// TestConcurrentLookups: many lookups at once, sharing table reads, each
// find its own connection's socket, and one made after a read began is
// found by a later read.
func TestConcurrentLookups(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("Linux only")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const n = 200
	var clients, served []net.Conn
	defer func() {
		for _, c := range append(clients, served...) {
			c.Close()
		}
	}()
	for range n {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		s, err := ln.Accept()
		if err != nil {
			t.Fatal(err)
		}
		clients, served = append(clients, c), append(served, s)
	}
	var wg sync.WaitGroup
	inodes := make([]uint64, n)
	errs := make([]error, n)
	for i, s := range served {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sock, err := Lookup(s)
			inodes[i], errs[i] = sock.Inode, err
			if err == nil && sock.UID != os.Getuid() {
				t.Errorf("connection %d: uid %d, want %d", i, sock.UID, os.Getuid())
			}
		}()
	}
	wg.Wait()
	seen := map[uint64]bool{}
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("connection %d: %v", i, errs[i])
		}
		if seen[inodes[i]] {
			t.Errorf("connection %d: inode %d found for another connection too", i, inodes[i])
		}
		seen[inodes[i]] = true
	}
	t.Logf("%d table reads (this test's and any before) for %d lookups at once", shared.started, n)
}
