package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
	"github.com/plugkit-go/plugkit/pipeline/policy/redisrate"
)

// TestSharedConcurrencyAcrossReplicas: three hosts share one real Redis
// for the per-principal concurrency (3 at once, leases of 2s); one
// principal (an API key every host accepts) sends 5 calls of a tool that
// naps 4s to each at once:
//   - exactly 3 run, the 12 others are DENIED as having 3 calls running
//     across every replica; calls sent when the 3 have run past their
//     lease's TTL are DENIED too (the leases are renewed);
//   - once they end, 3 calls at once all run (the slots were released);
//   - a replica killed (SIGKILL) while it holds the 3 slots keeps them
//     until its leases lapse, no longer than their TTL after the kill;
//   - with Redis gone, on_store_error left at "deny" denies a call saying
//     why, and the metrics count the store's questions and errors by op.
func TestSharedConcurrencyAcrossReplicas(t *testing.T) {
	needShippedDeployment(t)
	srv := testredis.Start(t)
	const (
		limit    = 3
		leaseTTL = 2 * time.Second
		napFor   = 4 * time.Second // past the lease's TTL: renewed while it runs
	)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	replicas, sessions := sharedReplicas(t, ctx, napFor,
		fmt.Sprintf("    per_principal {\n      concurrency = %d\n      store = %q\n      lease_ttl = %q\n    }\n", limit, srv.URL(), leaseTTL))
	rc := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer rc.Close()
	leaseKey := redisrate.SlotPrefix + "agent:bot"
	// held is how many leases have not lapsed, by the Redis server's
	// clock (a lapsed one stays in the set until an acquire drops it).
	held := func() int64 {
		now, err := rc.Time(ctx).Result()
		if err != nil {
			t.Fatalf("TIME: %v", err)
		}
		n, err := rc.ZCount(ctx, leaseKey, fmt.Sprint(now.UnixMilli()+1), "+inf").Result()
		if err != nil {
			t.Fatalf("ZCOUNT %s: %v", leaseKey, err)
		}
		return n
	}
	const refusal = "calls running across every replica (at most 3 at once)"

	// fire sends n calls to each of the replicas idx at once and returns
	// a channel that has their outcomes ("ok", "limited") once all ended.
	fire := func(tag string, n int, idx ...int) <-chan map[string]int {
		out := make(chan map[string]int, 1)
		var mu sync.Mutex
		counts := map[string]int{}
		var wg sync.WaitGroup
		for _, i := range idx {
			for j := range n {
				wg.Go(func() {
					r, err := nap(ctx, sessions[i], fmt.Sprintf("%s-%s-%d", tag, replicas[i].name, j))
					kind := "other"
					switch {
					case err != nil:
						kind = "error: " + err.Error()
					case !r.IsError:
						kind = "ok"
					case strings.Contains(toolText(r), "rate-limited") && strings.Contains(toolText(r), refusal):
						kind = "limited"
					default:
						kind = "other: " + toolText(r)
					}
					mu.Lock()
					counts[kind]++
					mu.Unlock()
				})
			}
		}
		go func() { wg.Wait(); out <- counts }()
		return out
	}

	// 1. Fifteen at once: three run, wherever they landed.
	first := fire("burst", 5, 0, 1, 2)
	time.Sleep(leaseTTL + 500*time.Millisecond)
	if n := held(); n != limit {
		t.Errorf("%d leases in Redis while the first calls run, want %d", n, limit)
	}
	late := <-fire("late", 1, 0, 1, 2)
	if late["limited"] != 3 {
		t.Errorf("calls sent past the lease's TTL while %d run: %v, want all limited", limit, late)
	}
	counts := <-first
	t.Logf("outcomes of 5 calls to each replica at once: %v", counts)
	if counts["ok"] != limit || counts["limited"] != 15-limit {
		t.Errorf("outcomes %v: want %d ok across the replicas and the rest limited", counts, limit)
	}

	// 2. The slots are back: three at once, one on each replica, all run.
	if n, err := rc.ZCard(ctx, leaseKey).Result(); err != nil || n != 0 {
		t.Errorf("%d leases left once the calls ended (%v)", n, err)
	}
	if again := <-fire("again", 1, 0, 1, 2); again["ok"] != limit {
		t.Errorf("three calls once the first ended: %v, want all ok", again)
	}

	// 3. Replica c takes the three slots and dies: they stay taken (a
	// call on a is refused) until the leases lapse.
	dying := fire("dying", limit, 2)
	testkit.WaitFor(t, 30*time.Second, fmt.Sprintf("replica c's calls to hold the %d slots", limit), func() bool { return held() == limit })
	c := replicas[2]
	if err := syscall.Kill(-c.run.cmd.Process.Pid, syscall.SIGKILL); err != nil {
		t.Fatalf("killing replica c: %v", err)
	}
	<-c.run.done
	killed := time.Now()
	if lost := <-dying; lost["ok"] != 0 {
		t.Errorf("calls to the killed replica: %v", lost)
	}
	if r, err := nap(ctx, sessions[0], "while-dead-leases"); err != nil || !r.IsError || !strings.Contains(toolText(r), refusal) {
		t.Errorf("a call while the dead replica's leases hold: %v %s", err, resultText(r))
	}
	for held() != 0 {
		if time.Since(killed) > leaseTTL+time.Second {
			t.Fatalf("the dead replica's %d leases still held %s after the kill (TTL %s)", held(), time.Since(killed), leaseTTL)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("the dead replica's slots came back %s after the kill", time.Since(killed).Round(10*time.Millisecond))
	if back := <-fire("back", 1, 0, 1); back["ok"] != 2 {
		t.Errorf("calls once the dead replica's leases lapsed: %v", back)
	}

	// 4. The store gone: denied, not let through.
	m := scrape(t, replicas[0].metrics)
	for _, op := range []string{"acquire", "renew", "release"} {
		if !strings.Contains(m, fmt.Sprintf("plugkit_limit_store_duration_seconds_count{op=%q}", op)) {
			t.Errorf("no %s in the store's metrics:\n%s", op, grepLines(m, "limit_store"))
		}
	}
	rc.Close()
	srv.Stop()
	r, err := nap(ctx, sessions[0], "after-redis")
	if err != nil {
		t.Fatal(err)
	}
	if !r.IsError || !strings.Contains(toolText(r), "concurrency limit store cannot be reached, and on_store_error is deny") {
		t.Errorf("a call with the store down: isError %v %q", r.IsError, toolText(r))
	}
	if m := scrape(t, replicas[0].metrics); !strings.Contains(m, `plugkit_limit_store_errors_total{op="acquire"} 1`) {
		t.Errorf("the store's error is not in the metrics:\n%s", grepLines(m, "limit_store"))
	}
}
