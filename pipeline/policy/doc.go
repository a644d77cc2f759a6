// Package policy holds the built-in policies: ordinary in-host plugins that
// wrap every call at stage 3 (timeout, retry, concurrency limit).
// Load them into the kernel like any plugin; where they are loaded decides
// their nesting, the first loaded being the outermost. Metrics are not a
// policy: package metrics counts every call, stage times included, from
// pipeline.Options.OnCall.
package policy

import (
	"context"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// wrapper is the plugin shape every policy shares: inject the tools service
// and add one stage-3 wrapper.
func wrapper(name string, fn pipeline.ExecuteFunc) kernel.Plugin {
	return kernel.Plugin{
		Name:   name,
		Inject: []string{pipeline.ServiceName},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			_, err = reg.OnExecute(fn)
			return err
		},
	}
}
