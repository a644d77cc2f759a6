package authn

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/plugkit-go/plugkit/pipeline"
)

// Local serves MCP over loopback HTTP without credentials to one OS user:
// a connection is accepted only when the process at its other end runs as
// UID (the host's own user), whose principal its calls are made for, as on
// the admin socket (local:<user>). Anyone else on the machine is refused
// with 401 and told to configure mcp_auth. Without it every local user
// could call the host's tools, and approve their own questions, as the
// host's user.
//
//	l := &authn.Local{UID: os.Getuid(), PeerUID: peeruid.Of, Principal: admin.LocalPrincipal}
//	srv.ConnContext = l.ConnContext
//	http.Handle("/", l.Require(mux))
type Local struct {
	// UID is the only user served.
	UID int
	// PeerUID tells the user of a connection's peer (peeruid.Of).
	PeerUID func(net.Conn) (int, error)
	// Principal is the principal of the user UID.
	Principal func(uid int) pipeline.Principal
	// OnRefused, when set, is told of each request refused ("other_user",
	// or "unknown_user" when the peer could not be told); it must not block.
	OnRefused func(reason string)

	once sync.Once
	p    pipeline.Principal
}

// peer is a connection's peer, looked up on its first request rather than
// when it is accepted: net/http accepts in one loop, which a lookup would
// slow for every client.
type peer struct {
	c    net.Conn
	once sync.Once
	uid  int
	err  error
}

type peerKey struct{}

// ConnContext is the http.Server's ConnContext: it remembers each
// connection for Require to ask about.
func (l *Local) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, &peer{c: c})
}

// Require wraps h so that only the requests of UID's connections reach it,
// with UID's principal as their token info (as a credential's would be, so
// that the SDK binds each session to its user); others get 401.
func (l *Local) Require(h http.Handler) http.Handler {
	l.once.Do(func() { l.p = l.Principal(l.UID) })
	info := tokenInfo(l.p, time.Now().Add(100*365*24*time.Hour), nil)
	verify := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return info, nil }
	sdk := auth.RequireBearerToken(verify, nil)(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		pr, _ := r.Context().Value(peerKey{}).(*peer)
		if pr == nil {
			l.refuse(w, "unknown_user", "this server cannot tell who connected, so it serves nobody without mcp_auth")
			return
		}
		pr.once.Do(func() { pr.uid, pr.err = l.PeerUID(pr.c) })
		switch {
		case pr.err != nil:
			l.refuse(w, "unknown_user", fmt.Sprintf("cannot tell which user connected (%v)", pr.err))
			return
		case pr.uid != l.UID:
			l.refuse(w, "other_user", fmt.Sprintf("this connection is from uid %d", pr.uid))
			return
		}
		// The SDK's middleware takes the principal as a bearer token's.
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer local")
		sdk.ServeHTTP(w, r)
	})
}

func (l *Local) refuse(w http.ResponseWriter, reason, why string) {
	if l.OnRefused != nil {
		l.OnRefused(reason)
	}
	w.Header().Set("WWW-Authenticate", `Bearer realm="plugkit", error="invalid_token"`)
	http.Error(w, fmt.Sprintf("unauthorized: %s. Without mcp_auth, MCP over HTTP serves only the user the host runs as (%s); "+
		"to serve other users, configure an mcp_auth block in the deployment's host block (API keys made with `host key add NAME`, or an OAuth issuer)",
		why, l.p), http.StatusUnauthorized)
}
