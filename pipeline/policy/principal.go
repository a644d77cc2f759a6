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
	if why := l.take(who); why != "" {
		r := pipeline.Fail(pipeline.CodeDenied, "rate-limited: "+why)
		r.DecidedBy = LimitsName
		return r
	}
	defer l.release(who)
	return next(ctx)
}

// take admits one call of who, or says why not.
func (l *principalLimits) take(who string) string {
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
	if l.cfg.Concurrency > 0 && b.running >= l.cfg.Concurrency {
		return fmt.Sprintf("%s already has %d calls running (at most %d at once)", who, b.running, l.cfg.Concurrency)
	}
	if b.rate != nil && !b.rate.AllowN(now, 1) {
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
