package remote_test

import (
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/remote"
)

// TestUnloadEndsWithStuckCriticalObserver: a critical plugin whose
// listener never returns (an audit plugin waiting for a log another
// process holds) has a batch of results on its way that never comes back.
// Unloading it still ends, within the drain timeouts: the wait for that
// batch is bounded, then the process is stopped, its results unacknowledged.
func TestUnloadEndsWithStuckCriticalObserver(t *testing.T) {
	ctx := testkit.ContextFor(t, 2*time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{DrainTimeout: time.Second})
	mustLoad(t, h, conformance.PluginSpec{Name: "worker", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{
		Name:      "stuck",
		Critical:  true,
		Observers: []conformance.ObserverSpec{{Behaviour: conformance.ObserveRecordID, Log: "seen", Sleep: time.Hour}},
	}, pluginConfig{})
	wantOK(t, call(ctx, h, "add", `{"a":2,"b":3}`), "5")
	// The batch carrying that result is on its way once the listener has
	// it; it never returns.
	time.Sleep(500 * time.Millisecond)
	unloaded := make(chan error, 1)
	go func() { unloaded <- h.m.Unload(ctx, "stuck") }()
	select {
	case err := <-unloaded:
		if err != nil {
			t.Fatalf("unload: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("the unload of a plugin whose listener never returns did not end")
	}
}
