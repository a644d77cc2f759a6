package policy

import (
	"context"
	"time"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// RetryConfig bounds the retry policy.
type RetryConfig struct {
	// Attempts is the most times a call runs, the first included (default 3).
	Attempts int
	// Backoff is the wait before the second attempt; it doubles after each
	// attempt up to MaxBackoff (defaults 50ms and 1s).
	Backoff    time.Duration
	MaxBackoff time.Duration
}

// Retry is the retry policy: a call to a tool declared idempotent that ends
// in TOOL_ERROR or TOOL_TIMEOUT runs again, up to Attempts times, with
// exponential backoff. Other tools and other outcomes pass through.
func Retry(cfg RetryConfig) kernel.Plugin {
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 50 * time.Millisecond
	}
	if cfg.MaxBackoff <= 0 {
		cfg.MaxBackoff = time.Second
	}
	return wrapper("retry", func(ctx context.Context, e *pipeline.Execution, next pipeline.ExecuteNext) pipeline.Result {
		if !e.Tool().Idempotent {
			return next(ctx)
		}
		wait := cfg.Backoff
		for attempt := 1; ; attempt++ {
			r := next(ctx)
			if attempt >= cfg.Attempts || !retryable(r) {
				return r
			}
			t := time.NewTimer(wait)
			select {
			case <-ctx.Done():
				t.Stop()
				return r
			case <-t.C:
			}
			wait = min(2*wait, cfg.MaxBackoff)
		}
	})
}

func retryable(r pipeline.Result) bool {
	c := r.Code()
	return c == pipeline.CodeToolError || c == pipeline.CodeToolTimeout
}
