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
// the rates in Redis, shared by every replica, and closer closes the
// connections (nil without a store).
func principalLimits(pp *deployment.PerPrincipal, m *metrics.Metrics) (kernel.Plugin, io.Closer, error) {
	cfg := policy.PerPrincipalConfig{Rate: pp.Rate, Burst: pp.Burst, Concurrency: pp.Concurrency}
	if pp.Store == "" {
		return policy.PerPrincipal(cfg), nil, nil
	}
	s, err := redisrate.Open(pp.Store)
	if err != nil {
		return kernel.Plugin{}, nil, err
	}
	cfg.Store, cfg.StoreFallback, cfg.OnStore = s, pp.OnStoreError == "local", m.LimitStore
	return policy.PerPrincipal(cfg), s, nil
}
