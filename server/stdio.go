package server

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/lineage"
	"github.com/plugkit-go/plugkit/mcpserver"
)

// ServeStdio serves d to one MCP client over in and out (`host mcp`, for
// clients that launch their tool servers) until the client closes in or
// ctx is cancelled. out belongs to the protocol: the log must go
// elsewhere. No admin socket is served, nor any other listener but the
// consent callback: a host shared with other clients is Run with an mcp
// address.
func ServeStdio(ctx context.Context, d *deployment.Deployment, o Options, in io.Reader, out io.Writer) error {
	log := o.logger()
	// Its plugins are known to every host as plugins (package lineage).
	unregister, err := lineage.Register("")
	if err != nil {
		return registryFailed(err)
	}
	defer unregister()
	h, err := host.New(d, log)
	if err != nil {
		return err
	}
	unlisten := logStates(h, log)
	defer unlisten()
	stopConsent, err := startConsent(d, h, log)
	if err != nil {
		h.Stop(ctx)
		return err
	}
	// Plugins start before the first request is read: a client usually
	// lists the tools once, right after it connects.
	h.Start(ctx)
	srv := mcpserver.New(h, mcpserver.Options{Version: o.Version, Logger: log.Named("mcp"), Principal: admin.LocalPrincipal(os.Getuid()),
		ToolSearch: d.Host.MCPToolSearch, ToolSearchOver: d.Host.MCPToolSearchOver})
	log.Info("serving MCP on stdio", "config", o.Config, "plugins", len(d.Plugins), "tools", len(h.Tools()))
	serveErr := srv.ServeStdio(ctx, in, out)

	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	_ = srv.Shutdown(sctx)
	stopConsent(sctx)
	h.Stop(sctx)
	log.Info("host stopped")
	if serveErr != nil {
		return fmt.Errorf("mcp: %w", serveErr)
	}
	return nil
}
