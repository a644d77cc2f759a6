package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/sandbox"
	"github.com/plugkit-go/plugkit/server"
)

func newLogger(e *env, level string) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{
		Name:   "host",
		Level:  hclog.LevelFromString(level),
		Output: e.stderr,
		Color:  hclog.AutoColor,
	})
}

func validate(ctx context.Context, e *env, _ []string) error {
	log := newLogger(e, "warn")
	d, diags := host.Load(ctx, e.config, log)
	if diags.HasErrors() {
		fmt.Fprint(e.stderr, shownText(deployment.Format(diags)))
		return fail(exitFailed, "")
	}
	if len(diags) > 0 {
		fmt.Fprint(e.stderr, shownText(deployment.Format(diags)))
	}
	fmt.Fprintf(e.stdout, "%s: ok (%d plugins)\n", e.config, len(d.Plugins))
	printVisibility(e.stdout, d)
	if sup, err := host.SandboxSupport(); err == nil {
		fmt.Fprintf(e.stdout, "sandbox support: %s\n", sup)
		// What holds each egress list: the proxy in the plugin's own
		// network namespace, or the weaker fallback without one.
		for _, p := range d.Plugins {
			if pol := p.Sandbox.Policy(); pol != nil && pol.Network.Mode == sandbox.NetworkEgress {
				fmt.Fprintf(e.stdout, "egress of %s (%s): %s\n", p.Name, pol.Network, pol.Enforcement(sup, os.Geteuid()).Egress)
			}
		}
	}
	return nil
}

func runHost(ctx context.Context, e *env, _ []string) error {
	boot := newLogger(e, "info")
	d, err := loadToServe(ctx, e, boot)
	if err != nil {
		return err
	}
	log := newLogger(e, d.Host.LogLevel)
	setExitBound(d.Host.ShutdownTimeout)
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	if err := server.Run(ctx, d, server.Options{Version: Version, Logger: log, Config: e.config, Reload: hup}); err != nil {
		return fail(exitFailed, "%v", err)
	}
	return nil
}

// serveMCP is `host mcp`: the deployment served to one MCP client over
// stdin and stdout, for clients that launch their tool servers. stdout
// belongs to the protocol, so every log line goes to stderr.
func serveMCP(ctx context.Context, e *env, _ []string) error {
	boot := newLogger(e, "warn")
	d, err := loadToServe(ctx, e, boot)
	if err != nil {
		return err
	}
	log := newLogger(e, d.Host.LogLevel)
	if err := server.ServeStdio(ctx, d, server.Options{Version: Version, Logger: log, Config: e.config}, e.stdin, e.stdout); err != nil {
		return fail(exitFailed, "%v", err)
	}
	return nil
}

// loadToServe loads the deployment file to start it, printing its
// diagnostics on stderr (stdout may be a protocol's): errors stop the
// command, saying whether the file or this machine is at fault; warnings
// (a sandbox the kernel enforces only in part, above all) do not.
func loadToServe(ctx context.Context, e *env, log hclog.Logger) (*deployment.Deployment, error) {
	d, diags := host.Load(ctx, e.config, log)
	if len(diags) > 0 {
		fmt.Fprint(e.stderr, shownText(deployment.Format(diags)))
	}
	if diags.HasErrors() {
		if host.FileIsValid(diags) {
			return nil, fail(exitFailed, "%s is valid, but the host cannot start on this machine as it is (above); nothing was started", e.config)
		}
		return nil, fail(exitFailed, "%s is not valid; nothing was started", e.config)
	}
	return d, nil
}
