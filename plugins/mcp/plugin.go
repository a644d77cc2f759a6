package main

import (
	"context"
	"fmt"
	"os"
	"reflect"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

const (
	pluginName    = "mcp"
	pluginVersion = "0.1.0"

	// goneDrain bounds how long the plugin waits, once its server went away,
	// for the calls in flight to return their TOOL_ERROR before it exits.
	goneDrain = 2 * time.Second
)

// newPlugin is the plugin's definition. Apply may run again on the same
// process (the host undid everything and applies again), so the running
// bridge is kept and replaced.
func newPlugin() sdk.Plugin[Config] {
	var (
		mu      sync.Mutex
		current *bridge
		// warm is the session Prepare opened, with the config it was
		// opened for, until Apply takes it (or Stop closes it).
		warm    *bridge
		warmFor Config
		warmBy  time.Time
		// tried is Prepare's failed attempt, until Apply takes it: Apply
		// tries again only within what is left of the same start_timeout.
		tried *attempt
	)
	takeTried := func(cfg Config) *attempt {
		mu.Lock()
		defer mu.Unlock()
		a := tried
		tried = nil
		if a != nil && !reflect.DeepEqual(a.cfg, cfg) {
			return nil
		}
		return a
	}
	takeWarm := func() (*bridge, Config, time.Time) {
		mu.Lock()
		defer mu.Unlock()
		b, cfg, by := warm, warmFor, warmBy
		warm = nil
		return b, cfg, by
	}
	swap := func(b *bridge) {
		mu.Lock()
		old := current
		current = b
		mu.Unlock()
		if old != nil {
			old.close()
		}
	}
	return sdk.Plugin[Config]{
		Name:        pluginName,
		Version:     pluginVersion,
		Inject:      []string{"tools"},
		ConfigRules: configRules,
		// Starting the server, its MCP handshake and listing its tools are
		// most of a start: done here, they overlap the other plugins'
		// starts, and Apply only registers.
		Prepare: func(ctx context.Context, log hclog.Logger, cfg Config) {
			set, err := check(cfg)
			if err != nil {
				return
			}
			// start_timeout bounds the whole start, Prepare and Apply
			// together: a server that hangs in initialize fails the start
			// after start_timeout, not after twice that.
			by := time.Now().Add(set.limits.startTimeout)
			ctx, cancel := context.WithDeadline(ctx, by)
			defer cancel()
			b := newBridge(set, log, nil, nil)
			if err := b.dial(ctx); err != nil {
				b.cancel() // (a refused session leaves the bridge unspent)
				log.Debug("prepare: server not reached; apply tries again within start_timeout", "error", err)
				mu.Lock()
				tried = &attempt{cfg: cfg, by: by, err: err}
				mu.Unlock()
				return
			}
			b.prelist(ctx)
			mu.Lock()
			warm, warmFor, warmBy = b, cfg, by
			mu.Unlock()
		},
		Apply: func(ctx context.Context, p *sdk.Context, cfg Config) error {
			set, err := check(cfg)
			if err != nil {
				return err
			}
			swap(nil)
			batch := func(ctx context.Context, add []sdk.Tool, drop []registration) ([]registration, []error, error) {
				replace := make([]*sdk.Handle, len(drop))
				for i, r := range drop {
					replace[i], _ = r.(*sdk.Handle)
				}
				hs, errs, err := p.RegisterTools(ctx, add, replace)
				regs := make([]registration, len(hs))
				for i, h := range hs {
					if h != nil {
						regs[i] = h
					}
				}
				return regs, errs, err
			}
			var b *bridge
			onGone := func(error) {
				// Let the calls in flight carry the cause back, then leave
				// the restart to the host.
				b.drain(goneDrain)
				time.Sleep(100 * time.Millisecond) // their replies are on the wire
				os.Exit(1)
			}
			a := takeTried(cfg)
			if w, wcfg, wby := takeWarm(); w != nil && reflect.DeepEqual(wcfg, cfg) {
				b = w
				b.batch, b.onGone = batch, onGone
				b.setNotify(p.ResourceUpdated, p.ResourcesListChanged)
				b.setAsk(p.Elicit)
				bctx := ctx
				if b.listed == nil {
					// Prepare's tools/list failed: listing again gets what
					// is left of the start's start_timeout.
					var cancel context.CancelFunc
					bctx, cancel = context.WithDeadline(ctx, wby)
					defer cancel()
				}
				err = b.begin(bctx)
			} else {
				if w != nil {
					w.close()
				}
				by := time.Now().Add(set.limits.startTimeout)
				if a != nil {
					if !time.Now().Before(a.by) {
						return a.spent(set.limits.startTimeout)
					}
					by = a.by
				}
				sctx, cancel := context.WithDeadline(ctx, by)
				defer cancel()
				b = newBridge(set, p.Logger(), batch, onGone)
				b.setNotify(p.ResourceUpdated, p.ResourcesListChanged)
				b.setAsk(p.Elicit)
				err = b.start(sctx)
			}
			if err != nil {
				return err
			}
			swap(b)
			return nil
		},
		Stop: func(context.Context) error {
			if w, _, _ := takeWarm(); w != nil {
				w.close()
			}
			mu.Lock()
			tried = nil
			mu.Unlock()
			swap(nil)
			return nil
		},
	}
}

// attempt is a start that Prepare tried and that failed.
type attempt struct {
	cfg Config
	// by is when the start's start_timeout runs out.
	by  time.Time
	err error
}

// spent is the start's failure once its start_timeout has run out: the
// server is not started again.
func (a *attempt) spent(limit time.Duration) error {
	return fmt.Errorf("%w; not tried again: start_timeout (%s) bounds the whole start", a.err, limit)
}
