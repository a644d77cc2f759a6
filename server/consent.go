package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/consent"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/httplimit"
)

// startConsent serves the user_consent callback listener, where users'
// browsers come back from the upstreams' authorization servers; without
// the block it does nothing.
func startConsent(d *deployment.Deployment, h *host.Host, log hclog.Logger) (stop func(context.Context), err error) {
	uc, cm := d.Host.UserConsent, h.Consent()
	if uc == nil || cm == nil {
		return func(context.Context) {}, nil
	}
	ln, err := net.Listen("tcp", uc.Listen)
	if err != nil {
		return nil, fmt.Errorf("user_consent: %w", err)
	}
	lim := httplimit.Limits{MaxConns: 64, MaxBodyBytes: 1 << 10}
	srv := lim.Server(lim.Body(cm.Handler()))
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lim.Listener(srv, ln)) }()
	log.Info("serving the consent callback", "url", uc.URL+consent.CallbackPath)
	return func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("consent callback shutdown", "error", err)
		}
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("consent callback server failed", "error", err)
		}
	}, nil
}
