package policy

import (
	"context"
	"sync"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// ConcurrencyConfig sets how many calls may run at once.
type ConcurrencyConfig struct {
	// Global limits calls across all tools; zero means no limit.
	Global int
	// PerTool limits calls to each tool; zero means no limit.
	PerTool int
	// Tools overrides PerTool for the named tools.
	Tools map[string]int
}

// Concurrency is the concurrency limit: a call waits for a free slot, and a
// caller that gives up while waiting gets ABORTED.
func Concurrency(cfg ConcurrencyConfig) kernel.Plugin {
	l := &limiter{cfg: cfg, perTool: map[string]chan struct{}{}}
	if cfg.Global > 0 {
		l.global = make(chan struct{}, cfg.Global)
	}
	return wrapper("concurrency", l.wrap)
}

type limiter struct {
	cfg     ConcurrencyConfig
	global  chan struct{}
	mu      sync.Mutex
	perTool map[string]chan struct{}
}

func (l *limiter) toolSlots(name string) chan struct{} {
	n, ok := l.cfg.Tools[name]
	if !ok {
		n = l.cfg.PerTool
	}
	if n <= 0 {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	ch, ok := l.perTool[name]
	if !ok {
		ch = make(chan struct{}, n)
		l.perTool[name] = ch
	}
	return ch
}

func (l *limiter) wrap(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
	for _, slots := range [2]chan struct{}{l.toolSlots(e.Name()), l.global} {
		if slots == nil {
			continue
		}
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			return pipeline.Fail(pipeline.CodeAborted, "call cancelled while waiting for a concurrency slot")
		}
	}
	return next(ctx)
}
