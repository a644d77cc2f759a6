package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// registration is one tool the host holds for the bridge: *sdk.Handle in
// the plugin, a fake in unit tests.
type registration interface {
	Dispose(ctx context.Context) error
}

// batchFunc registers add and disposes drop (registrations it returned
// before) in one step, as sdk.Context.RegisterTools does: a call sees the
// server's tools as they were or as they are after, and the host compiles
// its registry once. For a refused tool, regs[i] is nil and errs[i] says
// why; err means nothing changed.
type batchFunc func(ctx context.Context, add []sdk.Tool, drop []registration) (regs []registration, errs []error, err error)

// listDiff is what a new tools/list changes: the tools to register (new or
// changed) and the registrations to dispose (gone or changed).
type listDiff struct {
	add  []sdk.Tool
	drop []string // the server's names of the tools to dispose
}

// diffList compares the registered tools with those the server lists now.
// An unchanged tool is in neither list, so a list_changed that changes one
// tool among thousands registers one. The lists are sorted by name so that
// what is logged and registered does not depend on map order.
func diffList(have map[string]*bridged, want map[string]sdk.Tool) listDiff {
	var d listDiff
	for name, h := range have {
		if spec, ok := want[name]; !ok || !sameSpec(h.spec, spec) {
			d.drop = append(d.drop, name)
		}
	}
	for name, spec := range want {
		if h, ok := have[name]; !ok || !sameSpec(h.spec, spec) {
			d.add = append(d.add, spec)
		}
	}
	slices.Sort(d.drop)
	slices.SortFunc(d.add, func(a, b sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	return d
}

// apply makes the registered tools want, keyed by the server's tool name,
// through one batch. A tool the host refuses (its name is taken, or
// reserved for the plugin that declared it) is left out and logged once
// for as long as the host keeps refusing it the same way; the others are
// bridged. It returns how many tools were registered and disposed.
func (b *bridge) apply(ctx context.Context, want map[string]sdk.Tool) (added, disposed int, err error) {
	b.mu.Lock()
	d := diffList(b.tools, want)
	drop := make([]registration, len(d.drop))
	for i, name := range d.drop {
		drop[i] = b.tools[name].reg
	}
	b.mu.Unlock()
	if len(d.add) == 0 && len(d.drop) == 0 {
		return 0, 0, nil
	}
	regs, errs, err := b.batch(ctx, d.add, drop)
	if err != nil {
		return 0, 0, err
	}
	b.holdRefused(ctx, d.add, regs, errs)
	keyOf := map[string]string{} // registered name → server name
	for name, spec := range want {
		keyOf[spec.Name] = name
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, name := range d.drop {
		delete(b.tools, name)
	}
	if b.refused == nil {
		b.refused = map[string]string{}
	}
	for i, spec := range d.add {
		b.logTrust(keyOf[spec.Name], spec)
		if errs != nil && errs[i] != nil {
			if why := errs[i].Error(); b.refused[spec.Name] != why {
				b.refused[spec.Name] = why
				b.log.Warn("tool not bridged: the host refused it", "tool", spec.Name, "error", why)
			}
			continue
		}
		delete(b.refused, spec.Name)
		b.tools[keyOf[spec.Name]] = &bridged{spec: spec, reg: regs[i]}
		added++
	}
	return added, len(d.drop), nil
}

// holdRefused registers again, held absent with the host's reason, each
// tool of add the host refused (a name that looks like another plugin's
// tool, or that breaks the name rule once prefixed), so that the refusal
// shows in host tools and host status rather than only in the log. Where
// it is registered so, regs[i] and errs[i] are set to that registration.
// A name the host refuses even held (taken, or reserved for another
// plugin) stays refused.
func (b *bridge) holdRefused(ctx context.Context, add []sdk.Tool, regs []registration, errs []error) {
	var held []sdk.Tool
	var at []int
	for i, spec := range add {
		if errs == nil || errs[i] == nil || spec.Held != "" {
			continue
		}
		// The SDK names the tool before the host's error, which names it
		// too: once is enough.
		pre := fmt.Sprintf("register tool %q: ", spec.Name)
		why := strings.Replace(errs[i].Error(), pre+pre, pre, 1)
		held = append(held, holdTool(spec, spec.Name, "the host refused it: "+why))
		at = append(at, i)
	}
	if len(held) == 0 {
		return
	}
	hregs, herrs, err := b.batch(ctx, held, nil)
	if err != nil {
		return
	}
	for j, i := range at {
		if herrs != nil && herrs[j] != nil || hregs[j] == nil {
			continue
		}
		b.log.Warn("tool held absent: the host refused its name", "tool", add[i].Name, "error", errs[i])
		regs[i], errs[i] = hregs[j], nil
	}
}
