package remote_test

import (
	"context"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/remote"
)

// TestLoadAllAppliesInOrder: LoadAll starts the processes together but
// applies the plugins in the order given, whichever process was ready
// first; one that cannot start is reported and the others load.
func TestLoadAllAppliesInOrder(t *testing.T) {
	h := newHost(t, conformance.Config{}, remote.Options{})
	var mu sync.Mutex
	var applied []string
	unlisten := h.k.Events().Listen(kernel.EventStateChanged, "order", func(_ context.Context, payload any, _ kernel.Next) (any, error) {
		if sc, ok := payload.(kernel.StateChange); ok && sc.To == kernel.Loading {
			mu.Lock()
			applied = append(applied, sc.Plugin)
			mu.Unlock()
		}
		return nil, nil
	})
	defer unlisten()

	var specs, want []string
	var list []remote.Spec
	for i := range 6 {
		name := "p" + strconv.Itoa(i)
		spec := h.spec(t, conformance.PluginSpec{Name: name, Tools: []conformance.ToolSpec{echoTool("echo_" + name)}}, pluginConfig{}, nil)
		if i == 3 {
			spec.Path = spec.Path + ".missing"
		} else {
			want = append(want, name)
		}
		specs = append(specs, name)
		list = append(list, spec)
	}
	errs := h.m.LoadAll(testkit.ContextFor(t, 60*time.Second), list)
	for i, err := range errs {
		if (err != nil) != (i == 3) {
			t.Errorf("LoadAll %s: %v", specs[i], err)
		}
	}
	mu.Lock()
	got := slices.Clone(applied)
	mu.Unlock()
	if !slices.Equal(got, want) {
		t.Errorf("applied in the order %v, want %v", got, want)
	}
	for _, name := range want {
		wantOK(t, call(testkit.ContextFor(t, 10*time.Second), h, "echo_"+name, `{"x":1}`), `{"x":1}`)
	}
	if _, ok := status(h.m, "p3"); ok {
		t.Error("the plugin that could not start is still listed")
	}
}
