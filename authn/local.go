package authn

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/plugkit-go/plugkit/shared/identity"
)

// Local serves MCP over loopback HTTP without credentials to one OS user:
// a connection is accepted only when the process at its other end runs as
// UID (the host's own user), whose principal its calls are made for, as on
// the admin socket (local:<user>), and is no plugin of a host. Anyone else
// on the machine is refused with 401 and told to configure mcp_auth; a
// plugin (which runs as the host's user when not given another) with 403.
// Without it every local user, and every plugin that can reach loopback,
// could call the host's tools, and approve their own questions, as the
// host's user.
//
//	l := &authn.Local{UID: os.Getuid(), Peer: peerOf, Principal: admin.LocalPrincipal}
//	srv.ConnContext = l.ConnContext
//	http.Handle("/", l.Require(mux))
type Local struct {
	// UID is the only user served.
	UID int
	// Peer tells who is at the other end of a connection (peeruid).
	Peer func(net.Conn) (LocalPeer, error)
	// Principal is the principal of the user UID.
	Principal func(uid int) identity.Principal
	// OnRefused, when set, is told of each request refused ("other_user",
	// "unknown_user" when the peer could not be told, or a PeerRefusal's
	// reason); it must not block.
	OnRefused func(reason string)

	once sync.Once
	p    identity.Principal
}

// LocalPeer is what is known of a connection's other end.
type LocalPeer struct {
	// UID is the user whose process opened it.
	UID int
	// Vet, when set, is called once the user is UID's: an error refuses the
	// connection (its process is a plugin of a host, or cannot be found);
	// a *PeerRefusal names the reason counted. It runs once per connection.
	Vet func() error
}

// PeerRefusal is an error of LocalPeer.Vet with the reason OnRefused is
// told.
type PeerRefusal struct {
	Reason string
	Err    error
}

func (e *PeerRefusal) Error() string { return e.Err.Error() }
func (e *PeerRefusal) Unwrap() error { return e.Err }

// peer is a connection's peer, looked up on its first request rather than
// when it is accepted: net/http accepts in one loop, which a lookup would
// slow for every client.
type peer struct {
	c    net.Conn
	once sync.Once
	p    LocalPeer
	err  error // of the lookup
	vet  error // of Vet
}

type peerKey struct{}

// ConnContext is the http.Server's ConnContext: it remembers each
// connection for Require to ask about.
func (l *Local) ConnContext(ctx context.Context, c net.Conn) context.Context {
	return context.WithValue(ctx, peerKey{}, &peer{c: c})
}

// Require wraps h so that only the requests of UID's connections reach it,
// with UID's principal as their token info (as a credential's would be, so
// that the SDK binds each session to its user); others get 401, plugins
// 403.
func (l *Local) Require(h http.Handler) http.Handler {
	l.once.Do(func() { l.p = l.Principal(l.UID) })
	info := tokenInfo(l.p, time.Now().Add(100*365*24*time.Hour), nil)
	verify := func(context.Context, string, *http.Request) (*auth.TokenInfo, error) { return info, nil }
	sdk := auth.RequireBearerToken(verify, nil)(h)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reason, why, vet := l.check(r)
		switch {
		case vet != nil:
			l.refuseProcess(w, vet)
			return
		case reason != "":
			l.refuse(w, reason, why)
			return
		}
		// The SDK's middleware takes the principal as a bearer token's.
		r = r.Clone(r.Context())
		r.Header.Set("Authorization", "Bearer local")
		sdk.ServeHTTP(w, r)
	})
}

// check says whether r came on a connection of UID from a process that
// may be served: a reason and why when not, or vet, Vet's error, when
// the process may not be. The peer is looked up once per connection.
func (l *Local) check(r *http.Request) (reason, why string, vet error) {
	pr, _ := r.Context().Value(peerKey{}).(*peer)
	if pr == nil {
		return "unknown_user", "this server cannot tell who connected, so it serves nobody without mcp_auth", nil
	}
	pr.once.Do(func() {
		pr.p, pr.err = l.Peer(pr.c)
		// Only a connection of UID is vetted: another user's is
		// refused whatever its process.
		if pr.err == nil && pr.p.UID == l.UID && pr.p.Vet != nil {
			pr.vet = pr.p.Vet()
		}
	})
	switch {
	case pr.err != nil:
		return "unknown_user", fmt.Sprintf("cannot tell which user connected (%v)", pr.err), nil
	case pr.p.UID != l.UID:
		return "other_user", fmt.Sprintf("this connection is from uid %d", pr.p.UID), nil
	case pr.vet != nil:
		return "", "", pr.vet
	}
	return "", "", nil
}

// Who is the principal of UID when r came on one of its connections, from
// a process that may be served (as Require would serve it), else an error
// saying why not. A web page uses it to let the host's own user in
// without a credential and send everyone else to its sign-in form; the
// server must set ConnContext.
func (l *Local) Who(r *http.Request) (identity.Principal, error) {
	l.once.Do(func() { l.p = l.Principal(l.UID) })
	reason, why, vet := l.check(r)
	switch {
	case vet != nil:
		return identity.Principal{}, vet
	case reason != "":
		return identity.Principal{}, errors.New(why)
	}
	return l.p, nil
}

// refuseProcess refuses a connection of UID whose process may not be
// served: a plugin gets no credential that would let it in, so 403.
func (l *Local) refuseProcess(w http.ResponseWriter, err error) {
	reason := "unknown_process"
	var pr *PeerRefusal
	if errors.As(err, &pr) {
		reason = pr.Reason
	}
	if l.OnRefused != nil {
		l.OnRefused(reason)
	}
	http.Error(w, fmt.Sprintf("forbidden: %v. Without mcp_auth, MCP over HTTP serves only the processes of the user the host runs as (%s) "+
		"that are no plugin of a host nor started by one, and whose process can be found", err, l.p), http.StatusForbidden)
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
