package server

import (
	"errors"
	"fmt"
	"net"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/internal/lineage"
	"github.com/plugkit-go/plugkit/internal/peeruid"
)

// loopbackPeer tells authn.Local who is at the other end of a loopback
// MCP connection: the uid of its socket and, once that is the host's,
// whether a plugin holds it. A plugin runs as the host's user unless its
// sandbox names another, and one whose network reaches loopback (or that
// is not sandboxed) would otherwise be served as the local user, as the
// admin socket refuses to.
func loopbackPeer(c net.Conn) (authn.LocalPeer, error) {
	var s peeruid.Socket
	var err error
	if ps, ok := c.(httplimit.PeerSocketer); ok {
		s, err = ps.PeerSocket() // found once for the listener's per-peer bound
	} else {
		s, err = peeruid.Lookup(c)
	}
	if err != nil {
		return authn.LocalPeer{}, err
	}
	return authn.LocalPeer{UID: s.UID, Vet: func() error { return notPlugin(s) }}, nil
}

// peers remembers the loopback clients cleared, so that a client's next
// connection is vetted without reading every process's descriptors.
var peers lineage.Peers

// notPlugin refuses a socket that a plugin of a host, or anything one
// started, holds (lineage.Peers.Vet), and one held by no process it can
// find: a client that cannot be found cannot be told from a plugin.
func notPlugin(s peeruid.Socket) error {
	err := peers.Vet(s)
	if err == nil {
		return nil
	}
	var pe *lineage.PluginError
	if errors.As(err, &pe) {
		return &authn.PeerRefusal{Reason: "plugin", Err: fmt.Errorf("this connection is from a plugin: %v", err)}
	}
	return &authn.PeerRefusal{Reason: "unknown_process", Err: err}
}
