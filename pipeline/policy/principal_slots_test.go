package policy_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/internal/testkit/testredis"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/pipeline/policy"
	"github.com/plugkit-go/plugkit/pipeline/policy/redisrate"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// storeOps records what the policy told OnStore.
type storeOps struct {
	mu   sync.Mutex
	ops  map[string]int
	errs map[string]int
}

func (s *storeOps) record(op string, _ time.Duration, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ops == nil {
		s.ops, s.errs = map[string]int{}, map[string]int{}
	}
	s.ops[op]++
	if err != nil {
		s.errs[op]++
	}
}

func (s *storeOps) count(op string) (n, errs int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ops[op], s.errs[op]
}

// holder is a host whose tool "hold" runs until release is closed, telling
// started when it begins; "quick" answers at once, "fail" fails, "boom"
// panics.
type holder struct {
	tools   *pipeline.Tools
	started chan struct{}
	release chan struct{}
}

// sharedHost is one host (one replica) of cfg, its stores on url.
func sharedHost(t *testing.T, url string, cfg policy.PerPrincipalConfig) *holder {
	t.Helper()
	s, err := redisrate.Open(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cfg.Slots = s
	if cfg.Rate > 0 {
		cfg.Store = s
	}
	h := &holder{started: make(chan struct{}, 16), release: make(chan struct{})}
	h.tools = host(t, policy.PerPrincipal(cfg), toolPlugin{name: "P", tools: []pipeline.Tool{
		{
			ToolDescriptor: wire.ToolDescriptor{
				Name: "hold", Description: "d",
			},
			Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
				h.started <- struct{}{}
				select {
				case <-h.release:
					return "done", nil
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			},
		},
		{ToolDescriptor: wire.ToolDescriptor{Name: "quick", Description: "d"}, Execute: func(context.Context, *pipeline.Execution) (any, error) { return "ok", nil }},
		{ToolDescriptor: wire.ToolDescriptor{Name: "fail", Description: "d"}, Execute: func(context.Context, *pipeline.Execution) (any, error) { return nil, errors.New("no") }},
		{ToolDescriptor: wire.ToolDescriptor{Name: "boom", Description: "d"}, Execute: func(context.Context, *pipeline.Execution) (any, error) { panic("boom") }},
	}}.plugin())
	return h
}

// leases is how many leases key has in Redis.
func leases(t *testing.T, srv *testredis.Server, who string) int64 {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: srv.Addr})
	defer c.Close()
	n, err := c.ZCard(context.Background(), redisrate.SlotPrefix+who).Result()
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func wantLimited(t *testing.T, r pipeline.Result, what, says string) {
	t.Helper()
	if r.Code() != pipeline.CodeDenied || r.DecidedBy != policy.LimitsName || !strings.Contains(r.Error.Message, says) {
		t.Errorf("%s: %+v %v, want DENIED by limits saying %q", what, r, r.Error, says)
	}
}

// TestSharedConcurrency: two hosts on one Redis, a concurrency of 2: with
// one call of ann held on each, a third is DENIED on either host, counting
// the calls across every replica; bob is not held up; once they end, ann's
// slots are back and no lease is left in Redis.
func TestSharedConcurrency(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	ctx := testkit.Context(t)
	srv := testredis.Start(t)
	cfg := policy.PerPrincipalConfig{Concurrency: 2}
	a, b := sharedHost(t, srv.URL(), cfg), sharedHost(t, srv.URL(), cfg)
	ann := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "ann", Kind: "user"})
	bob := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "bob", Kind: "user"})
	results := make(chan pipeline.Result, 2)
	for _, h := range []*holder{a, b} {
		go func() { results <- call(ann, h.tools, "hold") }()
		recv(t, ctx, h.started)
	}
	for name, h := range map[string]*holder{"a": a, "b": b} {
		wantLimited(t, call(ann, h.tools, "quick"), "ann's third call, on "+name, "rate-limited: user:ann already has 2 calls running across every replica (at most 2 at once)")
	}
	if r := call(bob, a.tools, "quick"); !r.OK {
		t.Errorf("bob while ann is at her limit: %v", r.Error)
	}
	close(a.release)
	close(b.release)
	for range 2 {
		if r := recv(t, ctx, results); !r.OK {
			t.Errorf("a held call: %v", r.Error)
		}
	}
	if n := leases(t, srv, "user:ann"); n != 0 {
		t.Errorf("%d leases left once every call ended", n)
	}
	for _, h := range []*holder{a, b, a} {
		if r := call(ann, h.tools, "quick"); !r.OK {
			t.Errorf("ann once her calls ended: %v", r.Error)
		}
	}
}

// TestSharedSlotReleasedOnEveryPath: with one slot, a call that fails, one
// whose tool panics, one DENIED by the shared rate after it took its slot,
// and one whose caller gives up while it runs each give the slot back.
func TestSharedSlotReleasedOnEveryPath(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	ctx := testkit.Context(t)
	srv := testredis.Start(t)
	h := sharedHost(t, srv.URL(), policy.PerPrincipalConfig{Concurrency: 1, Rate: 0.001, Burst: 3})
	ann := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "ann", Kind: "user"})
	wantEmpty := func(what string) {
		t.Helper()
		if n := leases(t, srv, "user:ann"); n != 0 {
			t.Errorf("after %s: %d leases left", what, n)
		}
	}
	if r := call(ann, h.tools, "fail"); r.OK || r.Code() == pipeline.CodeDenied {
		t.Errorf("fail: %+v", r)
	}
	wantEmpty("a tool error")
	if r := call(ann, h.tools, "boom"); r.OK || !strings.Contains(r.Error.Message, "panic") {
		t.Errorf("boom: %+v %v", r, r.Error)
	}
	wantEmpty("a tool's panic")
	// Two calls have spent two of the burst of 3: one more runs, the next
	// takes its slot, then is denied by the rate.
	if r := call(ann, h.tools, "quick"); !r.OK {
		t.Fatalf("the last call of the burst: %v", r.Error)
	}
	wantLimited(t, call(ann, h.tools, "quick"), "past the burst", "across every replica")
	wantEmpty("a denial by the rate after the slot was taken")

	h2 := sharedHost(t, srv.URL(), policy.PerPrincipalConfig{Concurrency: 1})
	cctx, cancel := context.WithCancel(ann)
	done := make(chan pipeline.Result, 1)
	go func() { done <- call(cctx, h2.tools, "hold") }()
	recv(t, ctx, h2.started)
	if n := leases(t, srv, "user:ann"); n != 1 {
		t.Errorf("a running call holds %d leases", n)
	}
	cancel()
	if r := recv(t, ctx, done); r.OK {
		t.Errorf("a cancelled call: %+v", r)
	}
	testkit.Eventually(5*time.Second, func() bool { return leases(t, srv, "user:ann") == 0 })
	wantEmpty("the caller gave up")
	if r := call(ann, h2.tools, "quick"); !r.OK {
		t.Errorf("a call once the cancelled one ended: %v", r.Error)
	}
}

// TestSharedSlotRenewed: a call that runs three times its lease's TTL
// keeps its slot (its host renews the lease), so another host's call is
// still DENIED near its end; a lease whose host died (never renewed, never
// released) lapses after its TTL and the slot is taken again.
func TestSharedSlotRenewed(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	ctx := testkit.Context(t)
	srv := testredis.Start(t)
	const ttl = 600 * time.Millisecond
	var ops storeOps
	cfg := policy.PerPrincipalConfig{Concurrency: 1, LeaseTTL: ttl, OnStore: ops.record}
	a, b := sharedHost(t, srv.URL(), cfg), sharedHost(t, srv.URL(), cfg)
	ann := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "ann", Kind: "user"})
	done := make(chan pipeline.Result, 1)
	go func() { done <- call(ann, a.tools, "hold") }()
	recv(t, ctx, a.started)
	time.Sleep(3 * ttl)
	wantLimited(t, call(ann, b.tools, "quick"), "a call while a long one runs", "across every replica")
	close(a.release)
	if r := recv(t, ctx, done); !r.OK {
		t.Errorf("the long call: %v", r.Error)
	}
	if n, errs := ops.count("renew"); n < 3 || errs != 0 {
		t.Errorf("%d renewals, %d failed, in 3 TTLs", n, errs)
	}
	if n, errs := ops.count("acquire"); n != 2 || errs != 0 {
		t.Errorf("%d acquires, %d failed", n, errs)
	}

	dead, err := redisrate.Open(srv.URL())
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	if ok, _, err := dead.Acquire(ctx, "user:ann", "dead-host", 1, ttl); !ok || err != nil {
		t.Fatalf("the dead host's acquire: %v %v", ok, err)
	}
	wantLimited(t, call(ann, b.tools, "quick"), "a call while a dead host holds the slot", "across every replica")
	time.Sleep(ttl + 100*time.Millisecond)
	if r := call(ann, b.tools, "quick"); !r.OK {
		t.Errorf("a call once the dead host's lease lapsed: %v", r.Error)
	}
}

// TestSharedSlotsStoreDown: with Redis gone, on_store_error "deny" DENIES
// every call saying why; "local" judges calls by this host's own
// concurrency meanwhile. Each failed question is told to OnStore.
func TestSharedSlotsStoreDown(t *testing.T) {
	testredis.VerifyNoGoroutines(t)
	ctx := testkit.Context(t)
	srv := testredis.Start(t)
	var denyOps, localOps storeOps
	deny := sharedHost(t, srv.URL(), policy.PerPrincipalConfig{Concurrency: 1, OnStore: denyOps.record})
	local := sharedHost(t, srv.URL(), policy.PerPrincipalConfig{Concurrency: 1, StoreFallback: true, OnStore: localOps.record})
	srv.Stop()
	ann := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "ann", Kind: "user"})

	wantLimited(t, call(ann, deny.tools, "quick"), "deny", "the shared concurrency limit store cannot be reached, and on_store_error is deny")
	if _, errs := denyOps.count("acquire"); errs != 1 {
		t.Errorf("%d acquire errors told, want 1", errs)
	}
	if n, _ := denyOps.count("release"); n != 0 {
		t.Errorf("%d releases after a failed dial, which sent nothing", n)
	}

	done := make(chan pipeline.Result, 1)
	go func() { done <- call(ann, local.tools, "hold") }()
	recv(t, ctx, local.started)
	wantLimited(t, call(ann, local.tools, "quick"), "local, at the limit", "user:ann already has 1 calls running (at most 1 at once; this replica's count: the shared store cannot be reached)")
	close(local.release)
	if r := recv(t, ctx, done); !r.OK {
		t.Errorf("local, the held call: %v", r.Error)
	}
	if r := call(ann, local.tools, "quick"); !r.OK {
		t.Errorf("local, once the held call ended: %v", r.Error)
	}
	if _, errs := localOps.count("acquire"); errs != 3 {
		t.Errorf("%d acquire errors told, want 3", errs)
	}
}
