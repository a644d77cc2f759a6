package conformance

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/kernel"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// TestSimulatedProcesses runs every case, the (remote) ones included,
// against in-host plugins behind simulated processes, so that the cases'
// own code runs before a real process harness exists. It is no substitute
// for one: nothing here crosses a process boundary.
func TestSimulatedProcesses(t *testing.T) {
	Run(t, simulated{})
}

// TestNames checks the case list against CONFORMANCE.md's numbering and
// the §5 cases after it.
func TestNames(t *testing.T) {
	names := Names()
	if len(names) != 49 {
		t.Fatalf("%d cases, want 49 (45 of CONFORMANCE.md, 4 of SPEC §5)", len(names))
	}
	for i, n := range names {
		if want := []byte{byte('0' + (i+1)/10), byte('0' + (i+1)%10), '_'}; n[:3] != string(want) {
			t.Errorf("case %d is named %q", i+1, n)
		}
	}
}

// simulated is InHost with each plugin behind a simulated process: every
// call into a plugin hops to a goroutine, and Kill makes calls fail as a
// dead process's would, while a simulated supervisor notices the death a
// moment later, holds the pipeline while a critical plugin is down and ends
// the plugin's scope.
type simulated struct{}

func (simulated) New(t *testing.T, cfg Config) Host {
	inner := InHost().New(t, cfg).(*inHostHost)
	h := &simHost{inHostHost: inner, procs: map[string]*simProc{}}
	// Cleanups run last-in first-out: the supervisor's goroutines end
	// before the kernel closes.
	t.Cleanup(h.wg.Wait)
	return h
}

type simProc struct {
	spec    PluginSpec
	died    chan struct{}
	gone    chan struct{} // closed once the supervisor has ended the scope
	release func()        // the hold of a critical plugin, set before gone closes
}

type simHost struct {
	*inHostHost
	mu    sync.Mutex
	procs map[string]*simProc
	wg    sync.WaitGroup
}

var _ Killer = (*simHost)(nil)

func (h *simHost) Load(t *testing.T, p PluginSpec) error {
	t.Helper()
	// A process harness sends the spec as JSON: so does this one, so that a
	// spec field JSON would lose fails here first.
	raw, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("spec of plugin %q: %v", p.Name, err)
	}
	var sent PluginSpec
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&sent); err != nil {
		t.Fatalf("spec of plugin %q does not survive JSON: %v", p.Name, err)
	}
	if !reflect.DeepEqual(sent, p) {
		t.Fatalf("spec of plugin %q changed through JSON:\n sent %+v\n  got %+v", p.Name, p, sent)
	}
	p = sent
	proc := &simProc{spec: p, died: make(chan struct{})}
	plugin, err := buildPlugin(p, h.logs, proc.died)
	if err != nil {
		t.Fatalf("spec of plugin %q: %v", p.Name, err)
	}
	h.mu.Lock()
	h.procs[p.Name] = proc
	h.mu.Unlock()
	_, err = h.k.Load(plugin)
	return err
}

func (h *simHost) proc(t *testing.T, name string) *simProc {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.procs[name]
	if !ok {
		t.Fatalf("no plugin process %q", name)
	}
	return p
}

func (h *simHost) Kill(t *testing.T, name string) {
	t.Helper()
	proc := h.proc(t, name)
	close(proc.died)
	proc.gone = make(chan struct{})
	h.wg.Add(1)
	go func() {
		defer h.wg.Done()
		defer close(proc.gone)
		time.Sleep(time.Millisecond) // the supervisor notices a moment later
		if proc.spec.Critical {
			proc.release = h.tools.Hold(name, "critical plugin "+name+" is not active")
		}
		_ = h.k.Unload(name)
	}()
}

func (h *simHost) Restart(t *testing.T, name string) {
	t.Helper()
	proc := h.proc(t, name)
	select {
	case <-proc.gone:
	case <-time.After(10 * promptly):
		t.Fatalf("%s was not unloaded after its kill", name)
	}
	if err := h.Load(t, proc.spec); err != nil {
		t.Fatalf("restart %s: %v", name, err)
	}
	if s, ok := h.k.Scope(name); !ok || s.State() != kernel.Active {
		t.Fatalf("%s is not ACTIVE after its restart", name)
	}
	if proc.release != nil {
		proc.release()
	}
}
