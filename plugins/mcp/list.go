package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/toolname"
)

// list is the server's tools as they are to be registered, by the server's
// names: tools/list under start_timeout, at most max_tools of them.
func (b *bridge) list(ctx context.Context) (map[string]sdk.Tool, error) {
	ctx, cancel := b.set.limits.control(ctx)
	defer cancel()
	want := map[string]sdk.Tool{}
	twice := map[string]bool{}
	n := 0
	for t, err := range b.cs.Tools(ctx, nil) {
		if err != nil {
			err = b.set.limits.timedOut("tools/list", err)
			return nil, fmt.Errorf("tools/list of the MCP server %s: %w", b.set.describe(), err)
		}
		if n++; n > b.set.limits.maxTools {
			return nil, fmt.Errorf("tools/list of the MCP server %s: %w", b.set.describe(), b.set.limits.tooManyTools())
		}
		if !b.set.bridged(t.Name) {
			continue
		}
		if _, ok := want[t.Name]; ok || twice[t.Name] {
			// Which definition the server means is unknown: neither is
			// served (the last one used to win, silently).
			twice[t.Name] = true
			continue
		}
		spec, err := b.toolSpec(t)
		if err != nil {
			b.log.Warn("tool not bridged", "tool", t.Name, "error", err)
			twice[t.Name] = true // a second listing must not take its place
			continue
		}
		want[t.Name] = spec
	}
	for name := range twice {
		if spec, ok := want[name]; ok {
			want[name] = holdTool(spec, name, joinHeld(spec.Held, "the server listed this tool more than once in tools/list (across its pages); which definition it means is unknown"))
		}
	}
	holdLookalikes(want)
	if err := b.offerings(ctx, want); err != nil {
		// The tools are still bridged; the prompts are left out (absent,
		// never served unchecked) until a list succeeds.
		b.log.Warn("prompts not bridged", "server", b.set.describe(), "error", err)
	}
	return want, nil
}

// holdLookalikes holds every tool of a server whose name looks like the
// name of another of its tools (differs only by case or by characters that
// look alike, after the prefix): all of them, since which one a caller
// means is unknown. Names that break the name rule are held already.
func holdLookalikes(want map[string]sdk.Tool) {
	var groups [2]map[string][]string // key → the server's names
	for i := range groups {
		groups[i] = map[string][]string{}
	}
	for name, spec := range want {
		if toolname.Check(spec.Name) != nil {
			continue
		}
		for i, k := range toolname.Keys(spec.Name) {
			groups[i][k] = append(groups[i][k], name)
		}
	}
	like := map[string][]string{} // the server's name → the registered names it looks like
	for _, g := range groups {
		for _, names := range g {
			if len(names) < 2 {
				continue
			}
			for _, n := range names {
				for _, other := range names {
					if other != n && !slices.Contains(like[n], want[other].Name) {
						like[n] = append(like[n], want[other].Name)
					}
				}
			}
		}
	}
	for name, others := range like {
		slices.Sort(others)
		spec := want[name]
		want[name] = holdTool(spec, name, joinHeld(spec.Held, fmt.Sprintf("the name looks like %s, another tool of this server (they differ only by case or by characters that look alike)", quoteAll(others))))
	}
}

func joinHeld(held, why string) string {
	if held == "" {
		return why
	}
	return held + "; " + why
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = strconv.Quote(n)
	}
	return strings.Join(q, ", ")
}
