package server

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"sync/atomic"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/mcpserver"
)

// mcpFront is MCP over streamable HTTP while Run runs.
type mcpFront struct {
	stop func(context.Context)
	// drain waits until every MCP request being served has been answered.
	drain func(context.Context) error
	// ready says why the front takes no new session, nil when it does
	// (or when MCP is not served).
	ready func() error
	// refresh reads the TLS certificate and the API keys again, keeping
	// the ones in use when the new ones do not load.
	refresh func()
}

// startMCP serves MCP over streamable HTTP on the deployment's mcp address
// while Run runs, and does nothing without one: over TLS with an
// mcp_tls block, and only to clients with a credential with an mcp_auth
// block. Call it before the plugins start: a taken port then stops the
// host before it starts anything, and clients see the tools come as their
// plugins do. stop ends the calls in flight (ABORTED) and the sessions.
func startMCP(d *deployment.Deployment, h *host.Host, version string, log hclog.Logger) (*mcpFront, error) {
	front := &mcpFront{stop: func(context.Context) {}, refresh: func() {}, ready: func() error { return nil },
		drain: func(context.Context) error { return nil }}
	if d.Host.MCP == "" {
		return front, nil
	}
	opts := mcpserver.Options{
		Version: version, Logger: log.Named("mcp"),
		MaxSessions: d.Host.MCPMaxSessions, SessionIdle: d.Host.MCPIdleTimeout,
		AllowedOrigins: d.Host.MCPAllowedOrigins,
		ToolSearch:     d.Host.MCPToolSearch, ToolSearchOver: d.Host.MCPToolSearchOver,
		Limits: httplimit.Limits{MaxBodyBytes: int64(d.Host.MaxMessageBytes),
			MaxConnsPerPeer: d.Host.MCPMaxConnsPerPeer, OnPeerRefused: h.Metrics.PeerRefused},
	}
	// Ends what the front keeps running besides its server (following an
	// issuer's keys).
	ctx, cancel := context.WithCancel(context.Background())
	refreshers, err := authenticate(ctx, d, h, &opts, log)
	if err != nil {
		cancel()
		return nil, err
	}
	ln, err := mcpserver.Listen(d.Host.MCP)
	if err != nil {
		cancel()
		return nil, err
	}
	scheme := "http"
	if t := d.Host.MCPTLS; t != nil {
		cert, err := newCertificate(t.Cert, t.Key)
		if err != nil {
			ln.Close()
			cancel()
			return nil, fmt.Errorf("mcp_tls: %w", err)
		}
		ln = tls.NewListener(ln, &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: cert.get})
		scheme = "https"
		refreshers = append(refreshers, func() {
			if err := cert.load(); err != nil {
				log.Error("mcp_tls: certificate not reloaded; the one in use stays", "error", err)
			} else {
				log.Info("mcp_tls: certificate reloaded")
			}
		})
	}
	srv := mcpserver.New(h, opts)
	refreshKeys, err := useStateKey(srv, d.Host.MCPStateKey, log)
	if err != nil {
		_ = srv.Shutdown(context.Background())
		ln.Close()
		cancel()
		return nil, err
	}
	refreshers = append(refreshers, refreshKeys)
	served := make(chan error, 1)
	var stopped atomic.Bool
	go func() {
		served <- srv.Serve(ln)
		stopped.Store(true)
	}()
	front.drain = srv.Drain
	front.ready = func() error {
		if stopped.Load() {
			return errors.New("the MCP listener is closed")
		}
		return nil
	}
	authentication := "the host's own user only (no mcp_auth)"
	if d.Host.MCPAuth != nil {
		authentication = "mcp_auth"
	}
	log.Info("serving MCP", "url", scheme+"://"+d.Host.MCP+mcpserver.Path, "authentication", authentication)
	front.stop = func(ctx context.Context) {
		if err := srv.Shutdown(ctx); err != nil {
			log.Warn("mcp shutdown", "error", err)
		}
		if err := <-served; err != nil {
			log.Error("mcp server failed", "error", err)
		}
		cancel()
	}
	front.refresh = func() {
		for _, r := range refreshers {
			r()
		}
	}
	return front, nil
}

// authenticate sets who opts serves: with an mcp_auth block, clients with
// one of its credentials; without, the host's own user alone, and none of
// its plugins (the peer of each loopback connection is looked up:
// authn.Local, loopbackPeer). It returns what reads the credentials again
// on a reload.
func authenticate(ctx context.Context, d *deployment.Deployment, h *host.Host, opts *mcpserver.Options, log hclog.Logger) (refreshers []func(), err error) {
	if a := d.Host.MCPAuth; a != nil {
		v, reloadKeys, err := newVerifier(ctx, a, log)
		if err != nil {
			return nil, fmt.Errorf("mcp_auth: %w", err)
		}
		v.OnRefused = h.Metrics.AuthRefused
		opts.Authenticate = v.Require
		return []func(){reloadKeys}, nil
	}
	local := &authn.Local{UID: os.Geteuid(), Peer: loopbackPeer, Principal: admin.LocalPrincipal, OnRefused: h.Metrics.AuthRefused}
	opts.Authenticate = local.Require
	opts.ConnContext = local.ConnContext
	return nil, nil
}

// certificate is a key pair read from files, read again by load.
type certificate struct {
	certFile, keyFile string
	current           atomic.Pointer[tls.Certificate]
}

func newCertificate(certFile, keyFile string) (*certificate, error) {
	c := &certificate{certFile: certFile, keyFile: keyFile}
	return c, c.load()
}

func (c *certificate) load() error {
	pair, err := deployment.LoadKeyPair(c.certFile, c.keyFile)
	if err != nil {
		return err
	}
	c.current.Store(&pair)
	return nil
}

func (c *certificate) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return c.current.Load(), nil
}

// logStates logs every plugin's state changes (and reloads) until the
// returned function is called.
func logStates(h *host.Host, log hclog.Logger) (unlisten func()) {
	return h.OnStateChange("cli", func(sc kernel.StateChange) {
		switch {
		case h.Builtin(sc.Plugin):
			// The host's own parts (tools, timeout...) are not plugins:
			// listing them at shutdown read as plugins nobody configured.
		case sc.From == kernel.Active && sc.To == kernel.Active:
			log.Info("plugin reloaded", "plugin", sc.Plugin)
		case sc.From == sc.To:
		case sc.Err != nil:
			log.Error("plugin state", "plugin", sc.Plugin, "state", sc.To.String(), "error", sc.Err)
		default:
			log.Info("plugin state", "plugin", sc.Plugin, "state", sc.To.String())
		}
	})
}
