package sdk

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"

	"github.com/plugkit-go/plugkit/shared/pb"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// Serve runs def as a plugin process and returns when the host has stopped
// it. Call it from main and do nothing else there: anything printed to stdout
// before Serve would corrupt the handshake.
//
// A definition that cannot be served (no name, no Apply, a config type
// without a schema, ...) or an environment it cannot run in prints every
// problem to stderr and exits with status 1: the host reports the plugin as
// failed with that message.
func Serve[C any](def Plugin[C]) {
	d, err := def.build()
	if err != nil {
		exitWith("plugin %q cannot be served: %v", def.Name, err)
	}
	if err := serve(d); err != nil {
		exitWith("plugin %q: %v", def.Name, err)
	}
}

func exitWith(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "plugkit: "+format+"\n", args...)
	os.Exit(1)
}

// serve is the process setup, in order:
//
//  1. read the configured message limit (the host sets it in the
//     environment);
//  2. build the logger on the real stderr, which the host relays with the
//     plugin's name (go-plugin later points os.Stderr at its own pipe);
//  3. keep fd 1 for the handshake line only (protectHandshake);
//  4. arrange to exit when the host dies (exitWithParent), and not on
//     SIGTERM (holdTerm);
//  5. serve the Plugin service over gRPC with raised limits and a panic net,
//     reading each call's trace context when the host traces (tracing),
//     and on the call lanes when the host passed them (serveLanes).
func serve(d *definition) error {
	maxBytes, err := wire.MaxMessageBytesFromEnv()
	if err != nil {
		return err
	}
	log := hclog.New(&hclog.LoggerOptions{
		Name:       d.name,
		Output:     os.Stderr,
		JSONFormat: true,
		Level:      hclog.Debug,
	})
	parent := os.Getppid()
	if err := protectHandshake(); err != nil {
		return fmt.Errorf("cannot protect the handshake on stdout: %w", err)
	}
	exitWithParent(log, parent)
	holdTerm(log)
	tr := newTracing()
	callLane, callbackLane, lanes, err := wire.InheritedLanes()
	if err != nil {
		return err
	}

	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: wire.Handshake,
		Plugins: plugin.PluginSet{wire.PluginName: &wire.GRPCPlugin{
			PluginServer: func(b *plugin.GRPCBroker) pb.PluginServer {
				s := newServer(d, log, maxBytes, b.DialWithOptions)
				s.tracing = tr
				tr.attach(s)
				if lanes {
					s.serveLanes(callLane, callbackLane)
				}
				return s
			},
			MaxMessageBytes: maxBytes,
		}},
		GRPCServer: wire.NewGRPCServer(maxBytes, append(recoverInterceptors(log), tr.serverOptions()...)...),
		Logger:     log,
	})
	return nil
}

// holdTerm keeps SIGTERM from ending the process: the host ends its plugins
// itself, in order, when it is stopped (an audit log last, once it has
// what the host holds for it). A SIGTERM sent to the host's whole process
// group or cgroup at once (systemd's default KillMode, timeout(1)) would
// otherwise end every plugin under it, and the host would report each as
// a crash. The signal is caught, not ignored: an ignored signal stays
// ignored in the processes the plugin starts.
func holdTerm(log hclog.Logger) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM)
	go func() {
		for range ch {
			log.Debug("SIGTERM: not exiting; the host stops its plugins itself")
		}
	}()
}
