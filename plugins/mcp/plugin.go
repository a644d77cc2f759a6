package main

import (
	"context"
	"os"
	"sync"
	"time"

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
	)
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
			b = newBridge(set, p.Logger(), batch, func(error) {
				// Let the calls in flight carry the cause back, then leave
				// the restart to the host.
				b.drain(goneDrain)
				time.Sleep(100 * time.Millisecond) // their replies are on the wire
				os.Exit(1)
			})
			if err := b.start(ctx); err != nil {
				return err
			}
			swap(b)
			return nil
		},
		Stop: func(context.Context) error {
			swap(nil)
			return nil
		},
	}
}
