package redisrate

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
)

// TestSharedBudget: two stores (two hosts) on one real Redis take 40 calls
// at once from one budget with a burst of 5 and a rate too slow to refill
// during the test: exactly 5 are admitted; another key has its own budget.
func TestSharedBudget(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the server stops
	srv := testredis.Start(t)
	ctx := context.Background()
	var stores []*Store
	for range 2 {
		s, err := Open(srv.URL())
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		stores = append(stores, s)
	}
	var admitted atomic.Int32
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := stores[i%2].Allow(ctx, "agent:bot", 0.001, 5)
			if err != nil {
				t.Error(err)
			}
			if ok {
				admitted.Add(1)
			}
		}()
	}
	wg.Wait()
	if n := admitted.Load(); n != 5 {
		t.Errorf("%d calls admitted from a burst of 5", n)
	}
	if ok, err := stores[0].Allow(ctx, "agent:other", 0.001, 5); err != nil || !ok {
		t.Errorf("another principal: %v %v", ok, err)
	}
}

// TestUnreachable: a store whose server is gone answers an error, never an
// admission; the error does not repeat the URL's password.
func TestUnreachable(t *testing.T) {
	t.Cleanup(func() { goleak.VerifyNone(t) }) // after the server stops
	srv := testredis.Start(t)
	srv.Stop()
	s, err := Open("redis://:hunter2@" + srv.Addr + "/0")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ok, err := s.Allow(context.Background(), "agent:bot", 1, 1)
	if err == nil || ok {
		t.Fatalf("Allow with no server: %v %v", ok, err)
	}
	if _, err := Open("redis://:hunter2@[::1"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("Open of a bad URL: %v", err)
	}
}
