package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/confine"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/internal/lineage"
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
			if pol := p.Sandbox.Policy(); pol != nil && pol.Network.Mode == confine.NetworkEgress {
				fmt.Fprintf(e.stdout, "egress of %s (%s): %s\n", p.Name, pol.Network, pol.Enforcement(sup, os.Geteuid()).Egress)
			}
		}
	}
	return nil
}

func runHost(ctx context.Context, e *env, _ []string) error {
	boot := newLogger(e, "info")
	d, diags := host.Load(ctx, e.config, boot)
	if diags.HasErrors() {
		fmt.Fprint(e.stderr, shownText(deployment.Format(diags)))
		if host.FileIsValid(diags) {
			return fail(exitFailed, "%s is valid, but the host cannot start on this machine as it is (above); nothing was started", e.config)
		}
		return fail(exitFailed, "%s is not valid; nothing was started", e.config)
	}
	if len(diags) > 0 {
		// Warnings: a sandbox the kernel enforces only in part, above all.
		fmt.Fprint(e.stderr, shownText(deployment.Format(diags)))
	}
	log := newLogger(e, d.Host.LogLevel)
	setExitBound(d.Host.ShutdownTimeout)

	// Listen before starting plugins so that a second host on the same
	// socket is refused before it starts anything.
	ln, err := admin.Listen(d.Host.AdminSocket)
	if err != nil {
		return fail(exitFailed, "%v", err)
	}
	socket, err := filepath.Abs(d.Host.AdminSocket)
	if err != nil {
		ln.Close()
		return fail(exitFailed, "%v", err)
	}
	unregister, err := lineage.Register(socket)
	if err != nil {
		ln.Close()
		return registryFailed(err)
	}
	defer unregister()
	h, err := host.New(d, log)
	if err != nil {
		ln.Close()
		return fail(exitFailed, "%v", err)
	}
	logStates(h, log)
	front, err := startMCP(d, h, log)
	if err != nil {
		ln.Close()
		h.Stop(ctx)
		return fail(exitFailed, "%v", err)
	}
	stopMetrics, err := startMetrics(d, h, front.ready, log)
	if err != nil {
		ln.Close()
		front.stop(ctx)
		h.Stop(ctx)
		return fail(exitFailed, "%v", err)
	}
	stopConsent, err := startConsent(d, h, log)
	if err != nil {
		ln.Close()
		stopMetrics(ctx)
		front.stop(ctx)
		h.Stop(ctx)
		return fail(exitFailed, "%v", err)
	}
	stopConsole, err := startConsole(d, h, log)
	if err != nil {
		ln.Close()
		stopConsent(ctx)
		stopMetrics(ctx)
		front.stop(ctx)
		h.Stop(ctx)
		return fail(exitFailed, "%v", err)
	}
	h.Start(ctx)
	stopped := make(chan struct{}, 1)
	srv := admin.NewServer(admin.Controls{
		Host:    h,
		Version: Version,
		Limits:  httplimit.Limits{MaxBodyBytes: int64(d.Host.MaxMessageBytes)},
		Stop: func() {
			select {
			case stopped <- struct{}{}:
			default:
			}
		},
		Reload: func(ctx context.Context, plugin string) (string, error) {
			if plugin == "" {
				front.refresh()
				return reloadFile(ctx, h, log)
			}
			summary, diags := h.ReloadPlugin(ctx, plugin)
			return reported(log, summary, diags)
		},
	}, log.Named("admin"))
	serveErr := make(chan error, 1)
	go func() { serveErr <- srv.Serve(ln) }()
	log.Info("host running", "config", e.config, "admin_socket", d.Host.AdminSocket, "plugins", len(d.Plugins))

	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var runErr error
loop:
	for {
		select {
		case <-ctx.Done():
			log.Info("signal received; stopping")
			break loop
		case <-stopped:
			log.Info("stop requested; stopping")
			break loop
		case <-hup:
			log.Info("SIGHUP: reloading the deployment file")
			front.refresh()
			_, _ = reloadFile(ctx, h, log)
		case err := <-serveErr:
			runErr = err
			break loop
		}
	}
	drain(h, front, d.Host.ShutdownTimeout, log)
	sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_ = srv.Shutdown(sctx)
	front.stop(sctx)
	stopConsole(sctx)
	stopMetrics(sctx)
	stopConsent(sctx)
	h.Stop(sctx)
	os.Remove(d.Host.AdminSocket)
	log.Info("host stopped")
	if runErr != nil {
		return fail(exitFailed, "admin socket: %v", runErr)
	}
	return nil
}

// drain refuses new calls and MCP sessions (and /readyz answers 503) while
// the calls in flight finish, for at most timeout; the ones still running
// then are cut when the plugins stop.
func drain(h *host.Host, front *mcpFront, timeout time.Duration, log hclog.Logger) {
	start := time.Now()
	log.Info("draining: no new calls or MCP sessions; waiting for the calls in flight", "timeout", timeout)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	// The calls first, then the MCP requests that carry their answers.
	err := h.Drain(ctx)
	if err == nil {
		err = front.drain(ctx)
	}
	if err != nil {
		log.Warn("drain timed out; stopping anyway", "error", err)
		return
	}
	log.Info("drained", "took", time.Since(start).Round(time.Millisecond))
}

// reloadFile reloads the deployment file, logging what happened; an invalid
// file is refused with its diagnostics and the running deployment stays.
func reloadFile(ctx context.Context, h *host.Host, log hclog.Logger) (string, error) {
	summary, diags := h.ReloadFile(ctx)
	return reported(log, summary, diags)
}

// reported logs a reload's outcome and makes it the admin API's answer: an
// error when it had errors (with summary, what it did anyway; without, the
// file was refused), else summary. The log and the answer say the same:
// a log saying nothing changed beside a CLI saying what was reloaded left
// the operator to guess which was true.
func reported(log hclog.Logger, summary string, diags hcl.Diagnostics) (string, error) {
	if diags.HasErrors() {
		msg := strings.TrimSpace(deployment.Format(diags))
		what := "the deployment file is not valid; nothing changed"
		if summary != "" {
			what = summary
		}
		log.Error(what, "problems", msg)
		return "", errors.New(what + "\n" + msg)
	}
	var restart []string
	for _, d := range diags {
		log.Warn(d.Summary, "detail", d.Detail)
		if hc, ok := d.Extra.(host.HostSettingsChanged); ok {
			restart = append(restart, hc.Settings...)
		}
	}
	log.Info(summary)
	if len(restart) > 0 {
		return summary, &admin.NeedsRestart{Summary: summary, Settings: restart}
	}
	return summary, nil
}

// registryFailed is the error of a host registry that cannot be made: it
// is in TMPDIR (read-only in a container unless a volume is mounted there).
func registryFailed(err error) error {
	return fail(exitFailed, "%v; the registry of running hosts is made in TMPDIR (%s): set TMPDIR to a folder this user can write, "+
		"the same for every host run side by side (in a container, a writable volume such as an emptyDir)", err, os.TempDir())
}
