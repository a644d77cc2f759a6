package admin

import (
	"context"
	"net"
	"os/user"
	"strconv"
	"sync"

	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/identity"
)

// LocalPrincipal is the OS user uid as a principal: kind local, the user's
// name as its id, and its uid and groups as attributes ("uid:1000",
// "group:staff"), so that a rule can name a local user or a group. A uid
// with no name (a container's user) is its number.
func LocalPrincipal(uid int) pipeline.Principal {
	id := strconv.Itoa(uid)
	p := pipeline.Principal{ID: id, Kind: identity.KindLocal, Attributes: []string{"uid:" + id}}
	u, err := user.LookupId(id)
	if err != nil {
		return p
	}
	p.ID = u.Username
	gids, _ := u.GroupIds()
	for _, gid := range gids {
		if len(p.Attributes) >= identity.MaxAttributes {
			break
		}
		if g, err := user.LookupGroupId(gid); err == nil {
			p.Attributes = append(p.Attributes, "group:"+g.Name)
		}
	}
	return p.Bounded()
}

// peers remembers the principal of each uid: a lookup reads the system's
// user and group databases, which is too slow to do on every call.
type peers struct {
	mu   sync.Mutex
	byID map[int]pipeline.Principal
}

func (ps *peers) principal(uid int) pipeline.Principal {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if p, ok := ps.byID[uid]; ok {
		return p
	}
	if ps.byID == nil {
		ps.byID = map[int]pipeline.Principal{}
	}
	p := LocalPrincipal(uid)
	ps.byID[uid] = p
	return p
}

type peerKey struct{}

type pidKey struct{}

// connContext puts the principal of a connection's peer (the OS user
// whose process opened it) and that process's pid in the context of its
// requests.
func (ps *peers) connContext(ctx context.Context, c net.Conn) context.Context {
	for {
		if u, ok := c.(*net.UnixConn); ok {
			if pid, ok := peerPID(u); ok {
				ctx = context.WithValue(ctx, pidKey{}, pid)
			}
			if uid, ok := peerUID(u); ok {
				return context.WithValue(ctx, peerKey{}, ps.principal(uid))
			}
			return ctx
		}
		w, ok := c.(interface{ NetConn() net.Conn })
		if !ok {
			return ctx
		}
		c = w.NetConn()
	}
}

// connPID is the pid of the process that opened the request's connection.
func connPID(ctx context.Context) (int, bool) {
	pid, ok := ctx.Value(pidKey{}).(int)
	return pid, ok
}

// peerPrincipal is the principal connContext found; ok is false when the
// socket could not tell.
func peerPrincipal(ctx context.Context) (pipeline.Principal, bool) {
	p, ok := ctx.Value(peerKey{}).(pipeline.Principal)
	return p, ok
}
