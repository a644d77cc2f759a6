package remote

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"

	"github.com/plugkit-go/plugkit/shared/wire"
)

// lanes are the host's ends of a plugin process's two call lanes
// (wire.EnvCallLanes): socket pairs made before the process starts, whose
// other ends it inherits. The host calls the plugin's stage handlers on the
// first when the plugin says it serves them (calls.enable); it answers the
// plugin's calls back on the second from the start (serveCallbacks). A
// plugin that does not serve them is called over gRPC and its ends stay
// unused.
type lanes struct {
	calls, callbacks net.Conn
	child            []*os.File // the process's ends, until it has started
}

// newLanes makes the lanes of the process cmd starts and passes their ends
// to it.
func newLanes(cmd *exec.Cmd) (*lanes, error) {
	l := &lanes{}
	for _, end := range []*net.Conn{&l.calls, &l.callbacks} {
		host, child, err := wire.LanePair()
		if err != nil {
			l.close()
			return nil, err
		}
		*end = host
		l.child = append(l.child, child)
	}
	first := 3 + len(cmd.ExtraFiles) // ExtraFiles[i] is fd 3+i in the process
	cmd.ExtraFiles = append(cmd.ExtraFiles, l.child...)
	cmd.Env = append(cmd.Env, wire.EnvCallLanes+"="+strconv.Itoa(first)+","+strconv.Itoa(first+1))
	return l, nil
}

// started closes the host's copies of the process's ends once it has
// started (or failed to): a lane then ends when the process does.
func (l *lanes) started() {
	if l == nil {
		return
	}
	for _, f := range l.child {
		_ = f.Close()
	}
	l.child = nil
}

// close closes both lanes: the plugin's ends read the end of them.
func (l *lanes) close() {
	if l == nil {
		return
	}
	l.started()
	for _, c := range []net.Conn{l.calls, l.callbacks} {
		if c != nil {
			_ = c.Close()
		}
	}
}

// serveCallbacks answers the plugin's calls back on its callback lane
// until the lane closes (the host stops the process) or the process exits.
func (in *instance) serveCallbacks() {
	ctx, cancel := in.untilExit(context.Background())
	defer cancel()
	lane := in.lanes.callbacks
	defer context.AfterFunc(ctx, func() { _ = lane.Close() })()
	// A plugin may not make the host run more than maxStreamCalls calls
	// for it at once: past that its lane is not read.
	fs := &wire.FrameServer{Handle: in.callbacks, MaxMessageBytes: in.maxMessage, Log: in.log, MaxInFlight: maxStreamCalls}
	fs.Serve(ctx, wire.NewLane(lane, in.maxMessage))
}
