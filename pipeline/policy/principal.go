package policy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// PerPrincipalConfig bounds what each principal may run; a zero field is
// no bound.
type PerPrincipalConfig struct {
	// Rate is the calls per second each principal may start, on average;
	// Burst how many it may start at once (default: Rate rounded up).
	Rate  float64
	Burst int
	// Concurrency is how many calls of each principal may run at once.
	Concurrency int
	// Store, when set, keeps the rate in a place every replica shares, so
	// that a principal's rate holds across them.
	Store RateStore
	// Slots, when set, keeps the calls in flight (Concurrency) in a place
	// every replica shares, so that a principal's concurrency holds across
	// them; each call holds a lease there for LeaseTTL, renewed while it
	// runs (principal_slots.go).
	Slots SlotStore
	// LeaseTTL is how long a slot outlives a host that stopped renewing it
	// (it died); default DefaultLeaseTTL.
	LeaseTTL time.Duration
	// StoreFallback says what a call gets while Store or Slots fails:
	// denied (false, the default) or judged by this process's own limits
	// (true).
	StoreFallback bool
	// OnStore, when set, is told of each question to Store or Slots: op
	// ("rate", "acquire", "renew" or "release"), how long it took and its
	// error (metrics).
	OnStore func(op string, d time.Duration, err error)
}

// RateStore admits calls against a rate shared with other hosts.
type RateStore interface {
	// Allow takes one call from key's budget of rate calls a second with
	// bursts of burst, atomically across every host that shares the
	// store, and reports whether there was one.
	Allow(ctx context.Context, key string, rate float64, burst int) (bool, error)
}

// PerPrincipal limits each principal's calls (pipeline.Execution.Principal;
// all calls made for nobody share one budget). A call over a limit is not
// queued: it is DENIED at once, saying it was rate-limited, decided by
// "limits", so that one agent in a loop cannot take the host from the
// others.
func PerPrincipal(cfg PerPrincipalConfig) kernel.Plugin {
	if cfg.Rate > 0 && cfg.Burst <= 0 {
		cfg.Burst = max(1, int(cfg.Rate+0.999))
	}
	if cfg.LeaseTTL <= 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	l := &principalLimits{cfg: cfg, by: map[string]*budget{}}
	return wrapper(LimitsName, l.wrap)
}

// LimitsName is the owner of the per-principal limits' denials.
const LimitsName = "limits"

type principalLimits struct {
	cfg PerPrincipalConfig
	mu  sync.Mutex
	by  map[string]*budget
}

// budget is one principal's.
type budget struct {
	rate     *rate.Limiter
	running  int
	lastUsed time.Time
}

// maxBudgets bounds the principals remembered: past it, those idle for
// idleBudget are forgotten (a forgotten principal starts afresh).
const (
	maxBudgets = 4096
	idleBudget = 10 * time.Minute
)

func (l *principalLimits) wrap(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
	who := e.Principal().String()
	sharedSlots := l.cfg.Slots != nil && l.cfg.Concurrency > 0
	if why := l.take(who, l.cfg.Store == nil, !sharedSlots); why != "" {
		return limited(why)
	}
	defer l.release(who)
	// The slot before the rate, as take does: a call refused for want of
	// a slot spends none of its principal's rate. A call denied by the
	// rate after it gives the slot back (the defer).
	if sharedSlots {
		held, why := l.acquire(ctx, who)
		if why != "" {
			return limited(why)
		}
		defer held()
	}
	if l.cfg.Store != nil && l.cfg.Rate > 0 {
		if why := l.shared(ctx, who); why != "" {
			return limited(why)
		}
	}
	return next(ctx)
}

func limited(why string) pipeline.Result {
	r := pipeline.Fail(pipeline.CodeDenied, "rate-limited: "+why)
	r.DecidedBy = LimitsName
	return r
}

// storeTimeout bounds one question to the shared store: a store that
// hangs must not hold calls.
const storeTimeout = 2 * time.Second

// shared asks the store for who's rate, or says why not.
func (l *principalLimits) shared(ctx context.Context, who string) string {
	sctx, cancel := context.WithTimeout(ctx, storeTimeout)
	start := time.Now()
	ok, err := l.cfg.Store.Allow(sctx, who, l.cfg.Rate, l.cfg.Burst)
	cancel()
	l.observe("rate", start, err)
	switch {
	case err != nil && l.cfg.StoreFallback:
		l.mu.Lock()
		defer l.mu.Unlock()
		if b := l.by[who]; b != nil && b.rate != nil && !b.rate.AllowN(time.Now(), 1) {
			return fmt.Sprintf("%s is over %g calls a second (this replica's count: the shared store cannot be reached)", who, l.cfg.Rate)
		}
		return ""
	case err != nil:
		return fmt.Sprintf("the shared rate limit store cannot be reached, and on_store_error is deny: %v", err)
	case !ok:
		return fmt.Sprintf("%s is over %g calls a second across every replica", who, l.cfg.Rate)
	}
	return ""
}

// take admits one call of who, or says why not; localRate and localSlots
// say whether this process's rate and concurrency are checked (they are
// not when a store keeps them). Every call it admits counts in running.
func (l *principalLimits) take(who string, localRate, localSlots bool) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := time.Now()
	b := l.by[who]
	if b == nil {
		if len(l.by) >= maxBudgets {
			for k, old := range l.by {
				if old.running == 0 && now.Sub(old.lastUsed) > idleBudget {
					delete(l.by, k)
				}
			}
		}
		b = &budget{}
		if l.cfg.Rate > 0 {
			b.rate = rate.NewLimiter(rate.Limit(l.cfg.Rate), l.cfg.Burst)
		}
		l.by[who] = b
	}
	b.lastUsed = now
	if localSlots && l.cfg.Concurrency > 0 && b.running >= l.cfg.Concurrency {
		return fmt.Sprintf("%s already has %d calls running (at most %d at once)", who, b.running, l.cfg.Concurrency)
	}
	if localRate && b.rate != nil && !b.rate.AllowN(now, 1) {
		return fmt.Sprintf("%s is over %g calls a second", who, l.cfg.Rate)
	}
	b.running++
	return ""
}

func (l *principalLimits) release(who string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if b := l.by[who]; b != nil {
		b.running--
	}
}
