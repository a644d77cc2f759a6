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
	h.reloading.Lock()
	defer h.reloading.Unlock()
	old := h.deployment()
	next, diags := Load(ctx, old.File, h.log)
	if diags.HasErrors() {
		return "", diags
	}
	oldSpecs := map[string]deployment.Plugin{}
	for _, p := range old.Plugins {
		oldSpecs[p.Name] = p
	}
	newNames := map[string]bool{}
	for _, p := range next.Plugins {
		newNames[p.Name] = true
	}
	var removed, changed, added []string
	for i := len(old.Plugins) - 1; i >= 0; i-- {
		if name := old.Plugins[i].Name; !newNames[name] {
			removed = append(removed, name)
		}
	}
	for _, p := range next.Plugins {
		prev, ok := oldSpecs[p.Name]
		switch {
		case !ok:
			added = append(added, p.Name)
		case !reflect.DeepEqual(prev.Spec(), p.Spec()):
			changed = append(changed, p.Name)
		}
	}

	var problems []string
	kept := map[string]bool{} // changed plugins whose old version stays
	for _, name := range removed {
		if err := h.mgr.Unload(ctx, name); err != nil {
			problems = append(problems, err.Error())
		}
	}
	for _, p := range next.Plugins {
		if !slices.Contains(changed, p.Name) && !slices.Contains(added, p.Name) {
			continue
		}
		if slices.Contains(changed, p.Name) {
			if err := h.mgr.Replace(ctx, p.Spec()); err != nil {
				problems = append(problems, err.Error())
				kept[p.Name] = true
			}
			continue
		}
		if err := h.mgr.Load(ctx, p.Spec()); err != nil {
			problems = append(problems, err.Error())
		}
	}
	// A plugin whose new block failed runs its old one: the deployment
	// says so, so that the next reload tries the new block again.
	for i, p := range next.Plugins {
		if kept[p.Name] {
			next.Plugins[i] = oldSpecs[p.Name]
		}
	}
	h.mu.Lock()
	h.Deployment = next
	h.mu.Unlock()
	if !slices.Equal(watched(old), watched(next)) {
		// The binaries to watch changed: watch the new set.
		h.endWatch()
		h.startWatch(ctx)
	}

	oh, nh := old.Host, next.Host
	// The default sandbox is in each plugin's spec: a change reloads them.
	oh.Sandbox, nh.Sandbox = nil, nil
	if !reflect.DeepEqual(oh, nh) {
		diags = append(diags, &hcl.Diagnostic{
			Severity: hcl.DiagWarning,
			Summary:  "Host settings changed",
			Detail:   "Changes to the host block take effect when the host is started again.",
		})
	}
	var reloaded, failed []string
	for _, name := range changed {
		if kept[name] {
			failed = append(failed, name)
		} else {
			reloaded = append(reloaded, name)
		}
	}
	summary := fmt.Sprintf("reloaded %s: %s added, %s removed, %s reloaded, %d unchanged",
		old.File, list(added), list(removed), list(reloaded), len(next.Plugins)-len(added)-len(changed))
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
