package server

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/httplimit"
	"github.com/plugkit-go/plugkit/internal/lineage"
)

// Options are what Run and ServeStdio need beyond the deployment.
type Options struct {
	// Version is the host's version, as the admin API and MCP report it.
	Version string
	// Logger receives the host's log; nil discards it.
	Logger hclog.Logger
	// Config names the deployment file in the log.
	Config string
	// Reload, when not nil, asks Run to read the deployment file again
	// each time it receives (the CLI passes the SIGHUPs it is sent).
	Reload <-chan os.Signal
}

func (o Options) logger() hclog.Logger {
	if o.Logger == nil {
		return hclog.NewNullLogger()
	}
	return o.Logger
}

// stopTimeout bounds stopping the listeners and the plugins once the drain
// is over.
const stopTimeout = 10 * time.Second

// Run serves d until ctx is cancelled, a stop is asked over the admin
// socket, or the admin socket fails; then it drains (no new calls or MCP
// sessions; the calls in flight finish within shutdown_timeout), stops
// every listener and the plugins, and removes the admin socket.
//
// The admin socket is taken first, so that a second host on the same
// socket is refused before it starts anything; then MCP, metrics, the
// consent callback and the console listen before the plugins start, so a
// taken port stops the host before any plugin runs.
func Run(ctx context.Context, d *deployment.Deployment, o Options) error {
	log := o.logger()
	ln, err := admin.Listen(d.Host.AdminSocket)
	if err != nil {
		return err
	}
	socket, err := filepath.Abs(d.Host.AdminSocket)
	if err != nil {
		ln.Close()
		return err
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
		return err
	}
	logStates(h, log)
	front, err := startMCP(d, h, o.Version, log)
	if err != nil {
		ln.Close()
		h.Stop(ctx)
		return err
	}
	// The other listeners' stops, the last started first.
	var stops []func(context.Context)
	fail := func(err error) error {
		ln.Close()
		for _, stop := range stops {
			stop(ctx)
		}
		front.stop(ctx)
		h.Stop(ctx)
		return err
	}
	starts := []func(*deployment.Deployment, *host.Host, hclog.Logger) (func(context.Context), error){
		func(d *deployment.Deployment, h *host.Host, log hclog.Logger) (func(context.Context), error) {
			return startMetrics(d, h, front.ready, log)
		},
		startConsent,
		startConsole,
	}
	for _, start := range starts {
		stop, err := start(d, h, log)
		if err != nil {
			return fail(err)
		}
		stops = append([]func(context.Context){stop}, stops...)
	}
	h.Start(ctx)
	stopped := make(chan struct{}, 1)
	srv := admin.NewServer(admin.Controls{
		Host:    h,
		Version: o.Version,
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
	log.Info("host running", "config", o.Config, "admin_socket", d.Host.AdminSocket, "plugins", len(d.Plugins))

	runErr := waitForStop(ctx, stopped, serveErr, o.Reload, func() {
		front.refresh()
		_, _ = reloadFile(ctx, h, log)
	}, log)
	drain(h, front, d.Host.ShutdownTimeout, log)
	sctx, cancel := context.WithTimeout(context.Background(), stopTimeout)
	defer cancel()
	_ = srv.Shutdown(sctx)
	front.stop(sctx)
	for _, stop := range stops {
		stop(sctx)
	}
	h.Stop(sctx)
	os.Remove(d.Host.AdminSocket)
	log.Info("host stopped")
	if runErr != nil {
		return fmt.Errorf("admin socket: %w", runErr)
	}
	return nil
}

// waitForStop returns when ctx is cancelled, a stop is asked (stopped) or
// the admin socket fails (serveErr, returned); each value from reload runs
// reloadFile meanwhile.
func waitForStop(ctx context.Context, stopped <-chan struct{}, serveErr <-chan error, reload <-chan os.Signal, reloadFile func(), log hclog.Logger) error {
	for {
		select {
		case <-ctx.Done():
			log.Info("signal received; stopping")
			return nil
		case <-stopped:
			log.Info("stop requested; stopping")
			return nil
		case <-reload:
			log.Info("SIGHUP: reloading the deployment file")
			reloadFile()
		case err := <-serveErr:
			return err
		}
	}
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
	return fmt.Errorf("%v; the registry of running hosts is made in TMPDIR (%s): set TMPDIR to a folder this user can write, "+
		"the same for every host run side by side (in a container, a writable volume such as an emptyDir)", err, os.TempDir())
}
