package main

import (
	"context"
	"fmt"

	"github.com/plugkit-go/plugkit/deployment"
)

// lock pins every plugin of the file to its binary's current checksum.
func lock(ctx context.Context, e *env, _ []string) error {
	pins, diags := deployment.Lock(e.config)
	if diags.HasErrors() {
		fmt.Fprint(e.stderr, deployment.Format(diags))
		return fail(exitFailed, "%s was not changed", e.config)
	}
	if e.json {
		return printJSON(e.stdout, pins)
	}
	for _, p := range pins {
		switch p.Old {
		case p.SHA256:
			fmt.Fprintf(e.stdout, "%s: already pinned to %s\n", p.Plugin, p.SHA256)
		case "":
			fmt.Fprintf(e.stdout, "%s: pinned to %s\n", p.Plugin, p.SHA256)
		default:
			fmt.Fprintf(e.stdout, "%s: pinned to %s (was %s)\n", p.Plugin, p.SHA256, p.Old)
		}
	}
	return nil
}
