package remote

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os/exec"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// instance is one running plugin process.
type instance struct {
	spec            Spec
	name            string
	log             hclog.Logger
	gp              *plugin.Client
	client          *wire.PluginClient
	pid             int
	started         time.Time
	maxMessage      int
	listenerTimeout time.Duration
	drainTimeout    time.Duration
	obs             *observers

	stopOnce sync.Once
	stopping chan struct{} // closed when the host stops it on purpose
}

// launch starts the plugin's binary and connects to it. The process gets no
// environment from the host but the message limit, the spec's own entries
// and what go-plugin needs.
func (m *Manager) launch(ctx context.Context, spec Spec) (*instance, error) {
	log := m.log.Named(spec.Name)
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	// The plugin's socket goes in the host's private folder (go-plugin
	// honours UnixSocketConfig.TempDir only with a custom runner, so the
	// variable it reads is set here).
	cmd.Env = append([]string{
		wire.MaxMessageEnv(m.opts.MaxMessageBytes),
		"PLUGIN_UNIX_SOCKET_DIR=" + m.socketDir,
		"TMPDIR=" + m.socketDir,
	}, spec.Env...)
	cfg := &plugin.ClientConfig{
		HandshakeConfig:  wire.Handshake,
		Plugins:          wire.ClientPlugins(m.opts.MaxMessageBytes),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		AutoMTLS:         !m.opts.DisableMTLS,
		Logger:           log,
		GRPCDialOptions:  wire.DialOptions(m.opts.MaxMessageBytes),
		SkipHostEnv:      true,
		// The host callback rides the plugin's own connection: no second
		// socket, no second TLS handshake.
		GRPCBrokerMultiplex: true,
		StartTimeout:        m.opts.StartTimeout,
		UnixSocketConfig:    &plugin.UnixSocketConfig{TempDir: m.socketDir},
	}
	if spec.SHA256 != "" {
		sum, err := hex.DecodeString(spec.SHA256)
		if err != nil || len(sum) != sha256.Size {
			return nil, fmt.Errorf("plugin %s: sha256 %q is not a hex SHA-256 digest", spec.Name, spec.SHA256)
		}
		cfg.SecureConfig = &plugin.SecureConfig{Checksum: sum, Hash: sha256.New()}
	}
	gp := plugin.NewClient(cfg)
	fail := func(what string, err error) (*instance, error) {
		gp.Kill()
		return nil, fmt.Errorf("plugin %s: %s: %w", spec.Name, what, err)
	}
	rpc, err := gp.Client()
	if err != nil {
		return fail("start "+spec.Path, err)
	}
	raw, err := rpc.Dispense(wire.PluginName)
	if err != nil {
		return fail("connect", err)
	}
	in := &instance{
		spec:            spec,
		name:            spec.Name,
		log:             log,
		gp:              gp,
		client:          raw.(*wire.PluginClient),
		started:         time.Now(),
		maxMessage:      m.opts.MaxMessageBytes,
		listenerTimeout: m.opts.ListenerTimeout,
		drainTimeout:    m.opts.DrainTimeout,
		stopping:        make(chan struct{}),
	}
	if rc := gp.ReattachConfig(); rc != nil {
		in.pid = rc.Pid
	}
	in.obs = newObservers(in)
	return in, nil
}

// describe asks the plugin what it is.
func (in *instance) describe(ctx context.Context) (*pb.DescribeResponse, error) {
	resp, err := in.client.Describe(ctx, &pb.DescribeRequest{})
	if err != nil {
		return nil, in.callErr("describe", err)
	}
	return resp, nil
}

func (in *instance) exited() bool {
	select {
	case <-in.client.Exited():
		return true
	default:
		return false
	}
}

// stop ends the process on purpose: queued results are delivered, the
// plugin is asked to shut down, then go-plugin ends the process. Calls in
// flight fail at once with the process gone.
func (in *instance) stop() {
	in.stopOnce.Do(func() {
		close(in.stopping)
		if !in.exited() {
			ctx, cancel := context.WithTimeout(context.Background(), in.drainTimeout)
			in.obs.drain(ctx)
			if _, err := in.client.Shutdown(ctx, &pb.ShutdownRequest{}); err != nil && !in.exited() {
				in.log.Debug("shutdown", "error", err)
			}
			cancel()
		}
		in.gp.Kill()
	})
}
