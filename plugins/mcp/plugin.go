package main

import (
	"context"
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
	)
	takeWarm := func() (*bridge, Config) {
		mu.Lock()
		defer mu.Unlock()
		b, cfg := warm, warmFor
		warm = nil
		return b, cfg
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
			b := newBridge(set, log, nil, nil)
			if err := b.dial(ctx); err != nil {
				log.Debug("prepare: server not reached; apply tries again", "error", err)
				return
			}
			b.prelist(ctx)
			mu.Lock()
			warm, warmFor = b, cfg
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
			if w, wcfg := takeWarm(); w != nil && reflect.DeepEqual(wcfg, cfg) {
				b = w
				b.batch, b.onGone = batch, onGone
				err = b.begin(ctx)
			} else {
				if w != nil {
					w.close()
				}
				b = newBridge(set, p.Logger(), batch, onGone)
				err = b.start(ctx)
			}
			if err != nil {
				return err
			}
			swap(b)
			return nil
		},
		Stop: func(context.Context) error {
			if w, _ := takeWarm(); w != nil {
				w.close()
			}
			swap(nil)
			return nil
		},
	}
}
