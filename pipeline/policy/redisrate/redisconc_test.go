package redisrate

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
)

// openStores opens n stores (n hosts) on srv.
func openStores(t *testing.T, url string, n int) []*Store {
	t.Helper()
	var stores []*Store
	for range n {
		s, err := Open(url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		stores = append(stores, s)
	}
	return stores
}

// TestSharedSlots: three stores (three hosts) on one real Redis try 30
// acquires of one principal's 4 slots at once: exactly 4 are taken. While
// they are held another acquire is refused, counting 4; another principal
// has slots of its own; once one is released a new acquire gets it, and
// releasing a lease twice, or one that never was, is no error.
func TestSharedSlots(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	stores := openStores(t, srv.URL(), 3)
	ctx := context.Background()
	const limit = 4
	var mu sync.Mutex
	var held []string
	var wg sync.WaitGroup
	for i := range 30 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lease := fmt.Sprintf("lease-%d", i)
			ok, running, err := stores[i%3].Acquire(ctx, "agent:bot", lease, limit, time.Minute)
			if err != nil {
				t.Error(err)
			}
			if ok {
				mu.Lock()
				held = append(held, lease)
				mu.Unlock()
			} else if running != limit {
				t.Errorf("a refused acquire counted %d running, want %d", running, limit)
			}
		}()
	}
	wg.Wait()
	if len(held) != limit {
		t.Fatalf("%d slots taken of %d: %v", len(held), limit, held)
	}
	if ok, running, err := stores[0].Acquire(ctx, "agent:bot", "late", limit, time.Minute); err != nil || ok || running != limit {
		t.Errorf("an acquire while all are held: %v %d %v", ok, running, err)
	}
	if ok, running, err := stores[1].Acquire(ctx, "agent:other", "o1", limit, time.Minute); err != nil || !ok || running != 1 {
		t.Errorf("another principal: %v %d %v", ok, running, err)
	}
	if err := stores[2].Release(ctx, "agent:bot", held[0]); err != nil {
		t.Fatal(err)
	}
	for _, lease := range []string{held[0], "never-taken"} {
		if err := stores[0].Release(ctx, "agent:bot", lease); err != nil {
			t.Errorf("release of %s, gone: %v", lease, err)
		}
	}
	if ok, running, err := stores[0].Acquire(ctx, "agent:bot", "after", limit, time.Minute); err != nil || !ok || running != limit {
		t.Errorf("an acquire after a release: %v %d %v", ok, running, err)
	}
}

// TestLeaseLapses: a lease not renewed lapses after its TTL (its host
// died), and its slot is taken again; a renewed lease outlives its first
// TTL; a lapsed lease is never renewed back into the set (Renew says it is
// lost); the key goes from Redis once its leases have lapsed.
func TestLeaseLapses(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	s := openStores(t, srv.URL(), 1)[0]
	ctx := context.Background()
	const ttl = 600 * time.Millisecond
	take := func(lease string) bool {
		t.Helper()
		ok, _, err := s.Acquire(ctx, "agent:bot", lease, 1, ttl)
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if !take("dead-host") || take("waiting") {
		t.Fatal("one slot: the first acquire takes it, the second must not")
	}
	time.Sleep(ttl + 100*time.Millisecond)
	if !take("live") {
		t.Fatal("the dead host's lease did not lapse after its TTL")
	}
	if ok, err := s.Renew(ctx, "agent:bot", "dead-host", ttl); err != nil || ok {
		t.Errorf("renewal of a lease that lapsed and was dropped: %v %v", ok, err)
	}
	// Renewed every third of its TTL, "live" keeps its slot for 3 TTLs.
	for range 9 {
		time.Sleep(ttl / 3)
		if ok, err := s.Renew(ctx, "agent:bot", "live", ttl); err != nil || !ok {
			t.Fatalf("renewal of a live lease: %v %v", ok, err)
		}
	}
	if take("waiting") {
		t.Fatal("a renewed lease's slot was taken")
	}
	time.Sleep(ttl + 1100*time.Millisecond) // the key outlives its last lease by 1s
	n, err := s.c.Exists(ctx, SlotPrefix+"agent:bot").Result()
	if err != nil || n != 0 {
		t.Errorf("the key of lapsed leases is still there: %d %v", n, err)
	}
}

// TestSlotsUnreachable: with the server gone, every question is an error,
// never a slot.
func TestSlotsUnreachable(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	s := openStores(t, srv.URL(), 1)[0]
	srv.Stop()
	ctx := context.Background()
	if ok, _, err := s.Acquire(ctx, "agent:bot", "l", 1, time.Minute); err == nil || ok {
		t.Errorf("Acquire with no server: %v %v", ok, err)
	}
	if ok, err := s.Renew(ctx, "agent:bot", "l", time.Minute); err == nil || ok {
		t.Errorf("Renew with no server: %v %v", ok, err)
	}
	if err := s.Release(ctx, "agent:bot", "l"); err == nil {
		t.Error("Release with no server: no error")
	}
}

// TestSlotsUnderChurn: 3 hosts, 24 workers each acquiring, holding a
// moment and releasing one principal's 3 slots again and again: no more
// than 3 are ever held at once (counted on the holders' side).
func TestSlotsUnderChurn(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	srv := testredis.Start(t)
	stores := openStores(t, srv.URL(), 3)
	ctx := context.Background()
	const limit = 3
	var inFlight, most, taken atomic.Int32
	var wg sync.WaitGroup
	for w := range 24 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := stores[w%3]
			for i := range 20 {
				lease := fmt.Sprintf("w%d-%d", w, i)
				ok, _, err := s.Acquire(ctx, "agent:bot", lease, limit, time.Minute)
				if err != nil {
					t.Error(err)
					return
				}
				if !ok {
					continue
				}
				taken.Add(1)
				n := inFlight.Add(1)
				for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
				}
				time.Sleep(time.Millisecond)
				inFlight.Add(-1) // before the release: the slot is still held
				if err := s.Release(ctx, "agent:bot", lease); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	t.Logf("%d slots taken, at most %d at once", taken.Load(), most.Load())
	if most.Load() > limit || taken.Load() < limit {
		t.Errorf("%d held at once (limit %d), %d taken in all", most.Load(), limit, taken.Load())
	}
}
