package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/metrics"
)

// startMetrics serves the host's metrics, /healthz and /readyz on the host
// block's metrics address, bounded like the other HTTP servers (a scrape is
// small); mcp is the MCP listener's part of readiness.
func startMetrics(d *deployment.Deployment, h *host.Host, mcp func() error, log hclog.Logger) (stop func(context.Context), err error) {
	if d.Host.Metrics == "" {
		return func(context.Context) {}, nil
	}
	ln, err := net.Listen("tcp", d.Host.Metrics)
	if err != nil {
		return nil, fmt.Errorf("metrics: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle(metrics.Path, h.Metrics.Handler())
	addHealth(mux, h, mcp)
	lim := httplimit.Limits{MaxConns: 16, MaxBodyBytes: 1 << 10}
	var handler http.Handler = mux
	if !d.Host.MetricsPublic {
		// Loopback only, and a DNS name rebound to 127.0.0.1 gets nothing.
		handler = httplimit.LoopbackHost(mux)
	}
	srv := lim.Server(lim.Body(handler))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lim.Listener(srv, ln)) }()
	log.Info("serving metrics", "url", "http://"+d.Host.Metrics+metrics.Path)
	return func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("metrics shutdown", "error", err)
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("metrics server failed", "error", err)
		}
	}, nil
}
