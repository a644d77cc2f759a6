package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/console"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/shared/identity"
)

// startConsole serves the console block's web console, when the file has
// one; the returned func stops it. Sign-in takes the credentials MCP
// takes (mcp_auth's keys and issuer), so the console needs mcp_auth.
func startConsole(d *deployment.Deployment, h *host.Host, log hclog.Logger) (func(context.Context), error) {
	cc := d.Console
	if cc == nil {
		return func(context.Context) {}, nil
	}
	a := d.Host.MCPAuth
	if a == nil {
		return nil, errors.New("console: sign-in uses the credentials of mcp_auth (API keys or an OAuth issuer); add an mcp_auth block to the host block")
	}
	ctx, cancel := context.WithCancel(context.Background())
	// The keys are those read at start: a reload re-reads them for MCP.
	au, _, err := newVerifier(ctx, a, log)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("console: mcp_auth: %w", err)
	}
	// The host's own user is let in without a credential, by the lineage
	// check loopback MCP makes (loopbackPeer): its processes that are no
	// plugin of a host.
	local := &authn.Local{UID: os.Geteuid(), Peer: loopbackPeer, Principal: admin.LocalPrincipal, OnRefused: func(string) {}}
	con, err := console.New(console.Config{
		Approvals: h.Approvals.Service, Status: h.Status, Tools: h.Tools, SessionTTL: cc.SessionTTL, Log: log.Named("console"),
		Local: local.Who, AuditLog: cc.AuditLog,
		SignIn: func(ctx context.Context, credential string) (identity.Principal, error) {
			ti, err := au.Verify(ctx, strings.TrimSpace(credential), nil)
			if err != nil {
				return identity.Principal{}, err
			}
			p, ok := authn.PrincipalOf(ti)
			if !ok {
				return identity.Principal{}, errors.New("the credential names no principal")
			}
			return p, nil
		},
	})
	if err != nil {
		cancel()
		return nil, err
	}
	ln, err := net.Listen("tcp", cc.Listen)
	if err != nil {
		cancel()
		return nil, fmt.Errorf("console: %w", err)
	}
	lim := httplimit.Limits{MaxBodyBytes: 64 << 10}
	srv := lim.Server(con)
	srv.ConnContext = local.ConnContext
	go func() {
		if err := srv.Serve(lim.Listener(srv, ln)); err != nil && !errors.Is(err, http.ErrServerClosed) {
			log.Error("console stopped", "error", err)
		}
	}()
	log.Info("console serving", "address", "http://"+ln.Addr().String())
	return func(ctx context.Context) {
		sctx, scancel := context.WithTimeout(ctx, 5*time.Second)
		defer scancel()
		_ = srv.Shutdown(sctx)
		cancel()
	}, nil
}
