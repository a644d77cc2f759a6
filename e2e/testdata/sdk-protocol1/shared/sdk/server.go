package sdk

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// server implements the Plugin service inside the plugin process.
// Describe, Apply and Shutdown are here; the stage handlers in handlers.go.
type server struct {
	pb.UnimplementedPluginServer

	def      *definition
	log      hclog.Logger
	maxBytes int
	dial     dialHost
	reg      registry
	gate     gate
	api      *Context
	tracing  *tracing // nil unless the host traces calls
	// callbacks carries the per-call calls back to the host (Next,
	// ExecuteTool, CallService) on the callback lane; nil without lanes.
	callbacks *wire.FrameClient

	// generation counts Applies, so that a Handle from an earlier Apply (whose
	// registrations the host already undid) disposes as a no-op.
	generation atomic.Uint64

	// applyMu serialises Apply; mu guards host, briefly.
	applyMu sync.Mutex
	mu      sync.Mutex
	host    *hostConn

	// stopped is closed by Shutdown; Context.Done exposes it.
	stopped  chan struct{}
	stopOnce sync.Once
}

func newServer(def *definition, log hclog.Logger, maxBytes int, dial dialHost) *server {
	s := &server{def: def, log: log, maxBytes: maxBytes, dial: dial, stopped: make(chan struct{})}
	s.api = &Context{srv: s}
	return s
}

var errShuttingDown = status.Error(codes.Unavailable, "plugin is shutting down")

// begin admits one handler call; the returned func ends it.
func (s *server) begin() (func(), error) {
	if !s.gate.enter() {
		return nil, errShuttingDown
	}
	return s.gate.exit, nil
}

func unknownHandler(kind, id string) error {
	return status.Errorf(codes.NotFound, "no %s registered with handler id %q", kind, id)
}

// Describe reports what the plugin is.
func (s *server) Describe(context.Context, *pb.DescribeRequest) (*pb.DescribeResponse, error) {
	return &pb.DescribeResponse{
		Name:             s.def.name,
		Version:          s.def.version,
		SdkVersion:       Version,
		ProtocolVersion:  wire.ProtocolVersion,
		ConfigSchemaJson: s.def.schema,
		Inject:           s.def.inject,
		Provides:         s.def.provides,
		CallStream:       true,
		CallLanes:        s.callbacks != nil,
	}, nil
}

// Apply connects to the host (once) and runs the plugin's apply function. A
// second Apply means the host undid everything of the first and loads the
// plugin again (a provider it injects came back): handlers are forgotten and
// the apply function runs afresh.
func (s *server) Apply(ctx context.Context, req *pb.ApplyRequest) (*pb.ApplyResponse, error) {
	end, err := s.begin()
	if err != nil {
		return nil, err
	}
	defer end()
	s.applyMu.Lock()
	defer s.applyMu.Unlock()

	if err := s.connect(req.GetHostBrokerId()); err != nil {
		return &pb.ApplyResponse{Error: "cannot reach the host: " + err.Error()}, nil
	}
	s.reg.reset()
	s.generation.Add(1)
	err = contain(s.log, "apply", func() error { return s.def.apply(ctx, s.api, req.GetConfigJson()) })
	if err != nil {
		return &pb.ApplyResponse{Error: err.Error()}, nil
	}
	return &pb.ApplyResponse{}, nil
}

// connectRetry bounds how long connect keeps trying a knock the host's
// broker was not ready for.
const connectRetry = 2 * time.Second

// connect dials the host's callback service, unless the connection to that
// broker id is already open.
func (s *server) connect(brokerID uint32) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host != nil && s.host.brokerID == brokerID {
		return nil
	}
	opts := append(hostDialOptions(s.maxBytes), s.tracing.dialOptions()...)
	conn, err := s.dial(brokerID, opts...)
	// The host starts serving its callback on a goroutine of its own
	// (go-plugin's AcceptAndServe), so a fast plugin's knock can reach the
	// host's broker before the listener for that id exists ("no listener
	// for id"). The id is valid, the listener is moments away: try again
	// for a bounded time before giving up.
	for deadline := time.Now().Add(connectRetry); err != nil && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		conn, err = s.dial(brokerID, opts...)
	}
	if err != nil {
		return err
	}
	if s.host != nil {
		_ = s.host.conn.Close()
	}
	s.host = &hostConn{brokerID: brokerID, conn: conn, rpc: s.hostRPC(pb.NewHostClient(conn))}
	return nil
}

// hostClient returns the host connection, or an error before the first Apply.
func (s *server) hostClient() (pb.HostClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host == nil {
		return nil, errors.New("not connected to the host: registrations and host calls work from Apply on")
	}
	return s.host.rpc, nil
}

// Shutdown lets calls in flight finish (bounded by ctx), runs the stop hook
// and closes the host connection. The host ends the process afterwards.
func (s *server) Shutdown(ctx context.Context, _ *pb.ShutdownRequest) (*pb.ShutdownResponse, error) {
	if err := s.gate.closeAndWait(ctx); err != nil {
		s.log.Warn("shutdown: calls still in flight", "error", err)
	}
	s.stopOnce.Do(func() { close(s.stopped) })
	var stopErr error
	if s.def.stop != nil {
		stopErr = contain(s.log, "stop", func() error { return s.def.stop(ctx) })
	}
	if err := s.tracing.flush(ctx); err != nil {
		s.log.Warn("shutdown: spans not handed to the host", "error", err)
	}
	s.close()
	if stopErr != nil {
		return &pb.ShutdownResponse{Error: fmt.Sprintf("stop: %v", stopErr)}, nil
	}
	return &pb.ShutdownResponse{}, nil
}

// close drops the host connection; safe to call more than once.
func (s *server) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.host != nil {
		_ = s.host.conn.Close()
		s.host = nil
	}
}

var _ pb.PluginServer = (*server)(nil)
