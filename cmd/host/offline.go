package main

import (
	"context"
	"fmt"
	"time"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
)

// startOffline starts a throwaway host from the deployment file (its
// plugins as configured; no admin socket, MCP or metrics), as `host test`
// and `host replay` run their calls against. executes says whether calls
// will be made, not only explained. stop ends it.
func startOffline(ctx context.Context, e *env, executes bool) (h *host.Host, stop func(), err error) {
	log := newLogger(e, "warn")
	d, ddiags := host.Load(ctx, e.config, log)
	if ddiags.HasErrors() {
		fmt.Fprint(e.stderr, shownText(deployment.Format(ddiags)))
		if host.FileIsValid(ddiags) {
			return nil, nil, fail(exitFailed, "%s is valid, but the host cannot start on this machine as it is (above); nothing was run", e.config)
		}
		return nil, nil, fail(exitUsage, "%s is not valid; nothing was run", e.config)
	}
	d.Host.ExplainOnly = !executes
	h, err = host.New(d, log)
	if err != nil {
		return nil, nil, fail(exitUsage, "%v", err)
	}
	h.Start(ctx)
	stop = func() {
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		h.Stop(sctx)
	}
	return h, stop, nil
}
