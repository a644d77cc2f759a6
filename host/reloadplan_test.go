package host

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/deployment"
)

func TestPlanReload(t *testing.T) {
	t.Parallel()
	const sumA = "306c6ca7407560340797866e077e053627ad409277d1b9da58106fce4cf717cb"
	const sumB = "aa6c6ca7407560340797866e077e053627ad409277d1b9da58106fce4cf717cb"
	plugin := func(name string) deployment.Plugin {
		return deployment.Plugin{Name: name, Path: "/opt/" + name, Config: json.RawMessage(`{}`)}
	}
	with := func(p deployment.Plugin, change func(*deployment.Plugin)) deployment.Plugin {
		change(&p)
		return p
	}
	dep := func(h deployment.Host, ps ...deployment.Plugin) *deployment.Deployment {
		return &deployment.Deployment{File: "deploy.hcl", Host: h, Plugins: ps}
	}
	a, b, c := plugin("a"), plugin("b"), plugin("c")
	pinned := with(a, func(p *deployment.Plugin) { p.SHA256 = sumA })
	off := false
	type step struct {
		name   string
		action reloadAction
	}
	for _, tc := range []struct {
		name        string
		old, next   *deployment.Deployment
		removed     []string
		steps       []step
		host, watch bool
		besidesA    []string
	}{{
		name: "same file",
		old:  dep(deployment.Host{}, a, b), next: dep(deployment.Host{}, a, b),
		steps: []step{{"a", keep}, {"b", keep}},
	}, {
		name: "added in the new file's order, removed last started first",
		old:  dep(deployment.Host{}, a, b, c), next: dep(deployment.Host{}, plugin("d"), b, plugin("e")),
		removed:  []string{"c", "a"},
		steps:    []step{{"d", add}, {"b", keep}, {"e", add}},
		besidesA: []string{"c", "d", "e"},
	}, {
		name: "a changed config replaces",
		old:  dep(deployment.Host{}, a, b), next: dep(deployment.Host{}, with(a, func(p *deployment.Plugin) { p.Config = json.RawMessage(`{"x":1}`) }), b),
		steps: []step{{"a", replace}, {"b", keep}},
	}, {
		name: "a changed restart policy replaces",
		old:  dep(deployment.Host{}, b), next: dep(deployment.Host{}, with(b, func(p *deployment.Plugin) { p.Restart.Attempts = 9 })),
		steps:    []step{{"b", replace}},
		besidesA: []string{"b"},
	}, {
		name: "a pin alone is a repin",
		old:  dep(deployment.Host{}, a), next: dep(deployment.Host{}, pinned),
		steps: []step{{"a", repin}},
	}, {
		name: "a new pin is a repin",
		old:  dep(deployment.Host{}, pinned), next: dep(deployment.Host{}, with(pinned, func(p *deployment.Plugin) { p.SHA256 = sumB })),
		steps: []step{{"a", repin}},
	}, {
		name: "a pin with another change replaces",
		old:  dep(deployment.Host{}, a), next: dep(deployment.Host{}, with(pinned, func(p *deployment.Plugin) { p.Critical = true })),
		steps: []step{{"a", replace}},
	}, {
		name: "a watch alone changes what is watched, not the plugin",
		old:  dep(deployment.Host{}, a), next: dep(deployment.Host{}, with(a, func(p *deployment.Plugin) { p.Watch = true })),
		steps: []step{{"a", keep}}, watch: true,
	}, {
		name: "a host setting is for the next start",
		old:  dep(deployment.Host{ListenerTimeout: time.Second}, a), next: dep(deployment.Host{ListenerTimeout: 2 * time.Second}, a),
		steps: []step{{"a", keep}}, host: true,
	}, {
		name: "the host's default sandbox is in the plugins' blocks",
		old:  dep(deployment.Host{}, a), next: dep(deployment.Host{Sandbox: &deployment.Sandbox{Enabled: &off}}, a),
		steps: []step{{"a", keep}},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			plan := planReload(tc.old, tc.next)
			var steps []step
			for _, s := range plan.Steps {
				steps = append(steps, step{s.Plugin.Name, s.Action})
			}
			if !reflect.DeepEqual(plan.Removed, tc.removed) || !reflect.DeepEqual(steps, tc.steps) ||
				(len(plan.HostSettings) > 0) != tc.host || plan.WatchChanged != tc.watch {
				t.Errorf("plan: removed %q, steps %v, host changed %t, watch changed %t\nwant: removed %q, steps %v, host changed %t, watch changed %t",
					plan.Removed, steps, len(plan.HostSettings) > 0, plan.WatchChanged, tc.removed, tc.steps, tc.host, tc.watch)
			}
			if got := plan.changedBesides("a"); !reflect.DeepEqual(got, tc.besidesA) {
				t.Errorf("changedBesides(a) = %q, want %q", got, tc.besidesA)
			}
		})
	}
}

func TestPlanReloadChangesNothing(t *testing.T) {
	t.Parallel()
	old := &deployment.Deployment{Plugins: []deployment.Plugin{{Name: "a", Inject: []string{"tools"}}}}
	next := &deployment.Deployment{Plugins: []deployment.Plugin{{Name: "a", Inject: []string{"tools", "store"}}}}
	planReload(old, next)
	if len(old.Plugins[0].Inject) != 1 || len(next.Plugins[0].Inject) != 2 {
		t.Error("planReload changed a deployment")
	}
}
