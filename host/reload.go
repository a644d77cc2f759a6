package host

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"

	"github.com/plugkit-go/plugkit/deployment"
)

// ReloadFile re-reads the deployment file. An invalid file is refused with
// its diagnostics and nothing changes. Otherwise plugins that were removed
// are stopped, plugins whose block changed are reloaded with the new one
// (the old version serves until the new one takes over, and stays if it
// fails),
// plugins that were added are started, and the rest are left untouched.
// Changes to the host block take effect at the next start; they are
// reported as a warning.
func (h *Host) ReloadFile(ctx context.Context) (string, hcl.Diagnostics) {
	summary, diags := h.reloadFile(ctx)
	h.Metrics.Reloaded(!diags.HasErrors())
	return summary, diags
}

func (h *Host) reloadFile(ctx context.Context) (string, hcl.Diagnostics) {
	h.reloading.Lock()
	defer h.reloading.Unlock()
	old := h.deployment()
	next, diags := Load(ctx, old.File, h.log)
	if diags.HasErrors() {
		return "", diags
	}
	return h.applyReload(ctx, old, next, planReload(old, next), diags)
}

// applyReload carries out plan, from the running deployment old to next:
// it stops, replaces and starts plugins, makes next the deployment and
// says what it did. diags are the new file's (warnings).
func (h *Host) applyReload(ctx context.Context, old, next *deployment.Deployment, plan reloadPlan, diags hcl.Diagnostics) (string, hcl.Diagnostics) {
	var problems, added, pinned, reloaded, failed []string
	for _, name := range plan.Removed {
		if err := h.mgr.Unload(ctx, name); err != nil {
			problems = append(problems, err.Error())
		}
	}
	kept := map[string]deployment.Plugin{} // changed plugins whose old version stays
	for _, s := range plan.Steps {
		p := s.Plugin
		switch s.Action {
		case keep:
			continue
		case add:
			added = append(added, p.Name)
			if err := h.mgr.Load(ctx, pluginSpec(p)); err != nil {
				problems = append(problems, err.Error())
			}
			continue
		case repin:
			if h.mgr.Pin(p.Name, p.SHA256) {
				// `host lock` pinned the binary that runs: not a new version.
				pinned = append(pinned, p.Name)
				continue
			}
		}
		if err := h.mgr.Replace(ctx, pluginSpec(p)); err != nil {
			problems = append(problems, err.Error())
			kept[p.Name] = *findPlugin(old, p.Name) // a replaced plugin ran before
			failed = append(failed, p.Name)
		} else {
			reloaded = append(reloaded, p.Name)
		}
	}
	// A plugin whose new block failed runs its old one: the deployment
	// says so, so that the next reload tries the new block again.
	for i, p := range next.Plugins {
		if o, ok := kept[p.Name]; ok {
			next.Plugins[i] = o
		}
	}
	// The host block in force stays the one the host started with (only
	// its default sandbox lives on, in the plugins' specs): the next
	// reload reports the same settings as waiting for a restart.
	settings := plan.HostSettings
	sandbox := next.Host.Sandbox
	next.Host = old.Host
	next.Host.Sandbox = sandbox
	next.Console = old.Console // served as started, like the host block
	h.mu.Lock()
	h.Deployment = next
	h.mu.Unlock()
	// Shadow blocks change what the pipeline applies, not the plugins:
	// they take effect at once, without a restart.
	if err := h.setShadow(next); err != nil {
		problems = append(problems, err.Error())
	}
	if plan.WatchChanged {
		// The binaries to watch changed: watch the new set.
		h.endWatch()
		h.startWatch(ctx)
	}

	if len(settings) > 0 {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Host settings changed",
			Detail:   strings.Join(settings, ", ") + ": takes effect at restart (the host block is read when the host starts).",
			Extra:    HostSettingsChanged{Settings: settings},
		})
	}
	summary := fmt.Sprintf("reloaded %s: %s added, %s removed, %s reloaded, %d unchanged",
		old.File, list(added), list(plan.Removed), list(reloaded), len(next.Plugins)-len(added)-len(reloaded)-len(failed))
	if len(pinned) > 0 {
		summary += fmt.Sprintf("; %s pinned to the binary that runs (no restart)", list(pinned))
	}
	if len(failed) > 0 {
		summary += fmt.Sprintf("; %s kept the running version", list(failed))
	}
	if len(problems) > 0 {
		return summary, append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError,
			Summary:  "Some plugins did not start",
			Detail:   strings.Join(problems, "; "),
		})
	}
	return summary, diags
}

// onlyPinChanged reports whether a plugin's block changed in its sha256
// alone.
func onlyPinChanged(prev, next deployment.Plugin) bool {
	a, b := pluginSpec(prev), pluginSpec(next)
	a.SHA256, b.SHA256 = "", ""
	return prev.SHA256 != next.SHA256 && reflect.DeepEqual(a, b)
}

// watched lists "name=path" for each plugin with watch = true.
func watched(d *deployment.Deployment) []string {
	var out []string
	for _, p := range d.Plugins {
		if p.Watch {
			out = append(out, p.Name+"="+p.Path)
		}
	}
	slices.Sort(out)
	return out
}

func list(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// ReloadPlugin is `host reload NAME`: it re-reads the deployment file, as
// ReloadFile does, and reloads the one plugin. An invalid file is refused
// with its diagnostics and nothing changes. When NAME's block changed, the
// new block replaces the running one (the old version serves until the
// new one takes over, and stays if it fails); otherwise its process is
// restarted with the same block. Changes to other blocks are not applied,
// and the answer says which: `host reload` applies them.
func (h *Host) ReloadPlugin(ctx context.Context, name string) (string, hcl.Diagnostics) {
	summary, diags := h.reloadPlugin(ctx, name)
	h.Metrics.Reloaded(!diags.HasErrors())
	return summary, diags
}

func (h *Host) reloadPlugin(ctx context.Context, name string) (string, hcl.Diagnostics) {
	h.reloading.Lock()
	defer h.reloading.Unlock()
	cur := h.deployment()
	prev := findPlugin(cur, name)
	if prev == nil {
		return name + " is not running", hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "No such plugin",
			Detail: fmt.Sprintf("No plugin named %q runs in this deployment.", name)}}
	}
	next, diags := Load(ctx, cur.File, h.log)
	if diags.HasErrors() {
		return "", diags
	}
	p := findPlugin(next, name)
	if p == nil {
		return name + " kept the running version", hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Plugin removed from the file",
			Detail: fmt.Sprintf("%s has no plugin %q any more: `host reload` stops it.", cur.File, name)}}
	}
	var summary string
	failed := func(err error) (string, hcl.Diagnostics) {
		return name + " kept the running version", append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagError, Summary: "Reload failed", Detail: err.Error()})
	}
	if reflect.DeepEqual(pluginSpec(*prev), pluginSpec(*p)) {
		if err := h.mgr.Reload(ctx, name); err != nil {
			return failed(err)
		}
		summary = fmt.Sprintf("reloaded %s (its block in %s is unchanged)", name, cur.File)
	} else {
		if err := h.mgr.Replace(ctx, pluginSpec(*p)); err != nil {
			return failed(err)
		}
		h.mu.Lock()
		d := *h.Deployment
		d.Plugins = slices.Clone(d.Plugins)
		for i := range d.Plugins {
			if d.Plugins[i].Name == name {
				d.Plugins[i] = *p
			}
		}
		h.Deployment = &d
		h.mu.Unlock()
		summary = fmt.Sprintf("reloaded %s with its new block from %s", name, cur.File)
	}
	if others := planReload(cur, next).changedBesides(name); len(others) > 0 {
		summary += fmt.Sprintf("; not applied: changes to %s (`host reload` applies the whole file)", list(others))
	}
	return summary, diags
}

// findPlugin returns d's plugin named name, nil when it has none.
func findPlugin(d *deployment.Deployment, name string) *deployment.Plugin {
	for i := range d.Plugins {
		if d.Plugins[i].Name == name {
			return &d.Plugins[i]
		}
	}
	return nil
}
