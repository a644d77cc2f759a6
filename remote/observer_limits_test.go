package remote_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/remote"
)

// TestObserversDrainOutlastsDrainTimeout: an observer behind by more than
// the drain timeout, but making progress, still receives every result of a
// call that returned before its plugin is unloaded: plain and critical
// alike. (A busy machine's audit log, fsyncing each line, was stopped with
// the results of a few seconds of calls unwritten.)
func TestObserversDrainOutlastsDrainTimeout(t *testing.T) {
	for _, critical := range []bool{false, true} {
		t.Run(fmt.Sprintf("critical=%v", critical), func(t *testing.T) {
			ctx := testkit.ContextFor(t, time.Minute)
			// A batch (drainBatch, 64) takes ≈0.2 s of the drain timeout's
			// 0.8 s: a loaded machine that slows one batch fourfold does
			// not stall the drain.
			const (
				drain    = 800 * time.Millisecond
				obsSleep = 3 * time.Millisecond
				n        = 600 // 1.8 s of observer work: 2.25 drain timeouts
			)
			h := newHost(t, conformance.Config{}, remote.Options{DrainTimeout: drain})
			mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{echoTool("t")}}, pluginConfig{})
			mustLoad(t, h, conformance.PluginSpec{Name: "auditor", Critical: critical, Observers: []conformance.ObserverSpec{{
				Behaviour: conformance.ObserveRecord, Sleep: obsSleep, Tools: []string{"t"}, Log: "obs",
			}}}, pluginConfig{})
			for range n {
				wantOK(t, call(ctx, h, "t", `{}`), `{}`)
			}
			queued := n - len(readLog(h.dir+"/obs.log"))
			start := time.Now()
			h.Unload(t, "auditor")
			got := readLog(h.dir + "/obs.log")
			t.Logf("%d of %d results were queued at the unload, which took %v (drain timeout %v)", queued, n, time.Since(start).Round(time.Millisecond), drain)
			if queued*int(obsSleep) <= int(drain) {
				t.Skipf("only %d results were still queued: the drain timeout was not put to the test", queued)
			}
			if len(got) != n || slices.ContainsFunc(got, func(l string) bool { return l != "t ok" }) {
				t.Errorf("the observer recorded %d of %d results before its process stopped", len(got), n)
			}
		})
	}
}

// TestDurableResultThatCrashesTheObserver: a result whose delivery kills a
// critical observer's process every time is given up on after it crashed
// the process alone, instead of being sent to every new process until the
// plugin is FAILED and every call DENIED. The results before and after it
// are recorded, the host logs and the status say which call was not, and
// calls keep working.
func TestDurableResultThatCrashesTheObserver(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{echoTool("t"), echoTool("poison")}}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{Name: "auditor", Critical: true, Observers: []conformance.ObserverSpec{{
		Behaviour: conformance.ObserveRecord, CrashOn: "poison", Log: "obs",
	}}}, pluginConfig{})
	wantOK(t, call(ctx, h, "t", `{}`), `{}`)
	// Recorded before the poison is sent: in one batch with it, the result
	// would be delivered again to the process after the crash (delivery is
	// at least once), which is not what this test is about.
	testkit.WaitFor(t, 10*time.Second, "the auditor to record the first result", func() bool { return len(readLog(h.dir+"/obs.log")) > 0 })
	wantOK(t, call(ctx, h, "poison", `{}`), `{}`)

	// The auditor crashes; while it is down every call is DENIED (it is
	// critical). Once its listeners gave up on the poison, it stays ACTIVE.
	// The same process twice, 100 ms apart: the status can read ACTIVE
	// for a moment after the process given the poison alone has crashed,
	// before the host has seen it exit.
	var st remote.Status
	settledPID := 0
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, _ = status(h.m, "auditor")
		if st.State == kernel.Active && st.Problem != "" && st.Queued == 0 && st.PID != 0 {
			if st.PID == settledPID {
				break
			}
			settledPID = st.PID
			time.Sleep(100 * time.Millisecond)
			continue
		}
		settledPID = 0
		if time.Now().After(deadline) {
			t.Fatalf("the auditor never got past the result that crashes it: %s", describeStatus(st))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !strings.Contains(st.Problem, "tool poison") {
		t.Errorf("status problem %q does not name the call given up on", st.Problem)
	}
	if st.Restarts > 8 {
		t.Errorf("the auditor was restarted %d times for one result", st.Restarts)
	}
	for range 3 {
		wantOK(t, call(ctx, h, "t", `{}`), `{}`)
	}
	deadline = time.Now().Add(10 * time.Second)
	want := []string{"t ok", "t ok", "t ok", "t ok"}
	if !testkit.Eventually(time.Until(deadline), func() bool { return slices.Equal(readLog(h.dir+"/obs.log"), want) }) {
		t.Fatalf("the auditor recorded %q, want %q (every result but the poison, once)", readLog(h.dir+"/obs.log"), want)
	}
	t.Logf("after %d restarts: %s", st.Restarts, st.Problem)
}
