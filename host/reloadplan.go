package host

import (
	"reflect"
	"slices"

	"github.com/plugkit-go/plugkit/deployment"
)

// reloadPlan is what reloading the whole file does, worked out from the
// running deployment and the file's new one before anything is applied
// (applyReload). Working it out changes nothing.
type reloadPlan struct {
	// Removed are the plugins gone from the file, to stop, the last
	// started first.
	Removed []string
	// Steps are the new file's plugins, in its order, with what each needs.
	Steps []reloadStep
	// HostSettings are the host block's settings that changed (apart from
	// its default sandbox, which is in each plugin's spec): they take
	// effect at the next start.
	HostSettings []string
	// WatchChanged says that the set of binaries to watch changed.
	WatchChanged bool
}

// reloadStep is one plugin of the new file and what its reload is.
type reloadStep struct {
	Plugin deployment.Plugin
	Action reloadAction
}

type reloadAction int

const (
	// keep: the block is unchanged; the plugin is left running.
	keep reloadAction = iota
	// add: a new block; the plugin is started.
	add
	// replace: the block changed; the new one replaces the running one.
	replace
	// repin: only the block's sha256 changed (`host lock`); when the
	// running binary is the pinned one the plugin keeps running, else it is
	// replaced.
	repin
)

// planReload compares the running deployment old with the file's new one.
func planReload(old, next *deployment.Deployment) reloadPlan {
	var plan reloadPlan
	prev := make(map[string]deployment.Plugin, len(old.Plugins))
	for _, p := range old.Plugins {
		prev[p.Name] = p
	}
	inNext := make(map[string]bool, len(next.Plugins))
	for _, p := range next.Plugins {
		inNext[p.Name] = true
		step := reloadStep{Plugin: p}
		o, ok := prev[p.Name]
		switch {
		case !ok:
			step.Action = add
		case reflect.DeepEqual(pluginSpec(o), pluginSpec(p)):
			step.Action = keep
		case onlyPinChanged(o, p):
			step.Action = repin
		default:
			step.Action = replace
		}
		plan.Steps = append(plan.Steps, step)
	}
	for i := len(old.Plugins) - 1; i >= 0; i-- {
		if name := old.Plugins[i].Name; !inNext[name] {
			plan.Removed = append(plan.Removed, name)
		}
	}
	plan.HostSettings = changedHostSettings(old.Host, next.Host)
	if consoleChanged(old.Console, next.Console) {
		plan.HostSettings = append(plan.HostSettings, "console")
	}
	plan.WatchChanged = !slices.Equal(watched(old), watched(next))
	return plan
}

// changedBesides lists, sorted, the plugins other than name that the plan
// adds, removes or changes.
func (p reloadPlan) changedBesides(name string) []string {
	var out []string
	for _, s := range p.Steps {
		if s.Action != keep && s.Plugin.Name != name {
			out = append(out, s.Plugin.Name)
		}
	}
	for _, n := range p.Removed {
		if n != name {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}
