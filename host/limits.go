package host

import (
	"io"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/metrics"
	"github.com/plugkit-go/plugkit/pipeline/policy"
	"github.com/plugkit-go/plugkit/pipeline/policy/redisrate"
)

// principalLimits is the per-principal policy of pp; with a store it keeps
// the rates and the calls in flight in Redis, shared by every replica, and
// closer closes the connections (nil without a store).
func principalLimits(pp *deployment.PerPrincipal, m *metrics.Metrics) (kernel.Plugin, io.Closer, error) {
	cfg := policy.PerPrincipalConfig{Rate: pp.Rate, Burst: pp.Burst, Concurrency: pp.Concurrency}
	if pp.Store == "" {
		return policy.PerPrincipal(cfg), nil, nil
	}
	s, err := redisrate.Open(pp.Store)
	if err != nil {
		return kernel.Plugin{}, nil, err
	}
	cfg.Store, cfg.Slots, cfg.LeaseTTL = s, s, pp.LeaseTTL
	cfg.StoreFallback, cfg.OnStore = pp.OnStoreError == "local", m.LimitStore
	return policy.PerPrincipal(cfg), s, nil
}
