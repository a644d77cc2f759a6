package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/deployment"
)

// lock pins every plugin of the file to its binary's current checksum and,
// when the host is running, the tools its bridged servers define now
// (tool pins, see deployment.LockTools): with PLUGIN, only that plugin's
// tools. It prints what changed, and reloads each plugin whose tool pins
// changed so that the tools held for them come back.
func lock(ctx context.Context, e *env, args []string) error {
	pins, diags := deployment.Lock(e.config)
	if diags.HasErrors() {
		fmt.Fprint(e.stderr, shownText(deployment.Format(diags)))
		return fail(exitFailed, "%s was not changed", e.config)
	}
	tools, terr := e.lockTools(ctx, args)
	if e.json {
		if terr != nil {
			return terr
		}
		return printJSON(e.stdout, struct {
			Binaries []deployment.Pin           `json:"binaries"`
			Tools    []deployment.ToolPinChange `json:"tools,omitempty"`
		}{pins, tools})
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
	for _, c := range tools {
		printToolPins(e, c)
	}
	return terr
}

// lockTools pins the definitions of the bridged tools the running host
// has, held ones included, and reloads the plugins whose pins changed. No
// running host is not an error: there is nothing to pin then, and it says
// so on stderr.
func (e *env) lockTools(ctx context.Context, args []string) ([]deployment.ToolPinChange, error) {
	c, err := e.client()
	if err != nil {
		return nil, err
	}
	ts, err := c.Tools(ctx)
	if err != nil {
		fmt.Fprintf(e.stderr, "tool definitions not pinned: %s (start the host, then run host lock again)\n", shown(err.Error()))
		return nil, nil
	}
	want := toolPins(ts)
	if len(args) == 1 {
		only, ok := want[args[0]]
		if !ok {
			return nil, fail(exitFailed, "%s bridges no tools in the running host (host tools lists what it has)", args[0])
		}
		want = map[string]map[string]string{args[0]: only}
	}
	if len(want) == 0 {
		return nil, nil
	}
	changes, diags := deployment.LockTools(e.config, want)
	if diags.HasErrors() {
		fmt.Fprint(e.stderr, shownText(deployment.Format(diags)))
		return nil, fail(exitFailed, "tool pins of %s were not changed", e.config)
	}
	for _, ch := range changes {
		if ch.Empty() {
			continue
		}
		if _, err := c.Reload(ctx, ch.Plugin); err != nil {
			return changes, fail(exitFailed, "%s: tool pins written, but the reload failed: %v (run host reload %s)", ch.Plugin, err, ch.Plugin)
		}
	}
	return changes, nil
}

// toolPins groups the pins of bridged tools (Definition "tool=NAME pin",
// one a line: a resource list entry has one per resource) by plugin and
// the server's name.
func toolPins(ts []admin.Tool) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, t := range ts {
		for _, line := range strings.Split(t.Definition, "\n") {
			rest, ok := strings.CutPrefix(line, "tool=")
			if !ok {
				continue
			}
			name, pin, ok := strings.Cut(rest, " ")
			if !ok {
				continue
			}
			if out[t.Owner] == nil {
				out[t.Owner] = map[string]string{}
			}
			out[t.Owner][name] = pin
		}
	}
	return out
}

func printToolPins(e *env, c deployment.ToolPinChange) {
	if c.Empty() {
		fmt.Fprintf(e.stdout, "%s: tool definitions already pinned\n", shown(c.Plugin))
		return
	}
	what := "tool definitions pinned"
	if c.First {
		what = "tool definitions pinned for the first time"
	}
	fmt.Fprintf(e.stdout, "%s: %s (%d new, %d changed, %d removed); reloaded\n", shown(c.Plugin), what, len(c.Added), len(c.Changed), len(c.Removed))
	for _, t := range c.Added {
		fmt.Fprintf(e.stdout, "  + %s\n", shown(t))
	}
	for _, t := range slices.Sorted(maps.Keys(c.Changed)) {
		fmt.Fprintf(e.stdout, "  ~ %s: %s changed\n", shown(t), shown(strings.Join(c.Changed[t], ", ")))
	}
	for _, t := range c.Removed {
		fmt.Fprintf(e.stdout, "  - %s\n", shown(t))
	}
}
