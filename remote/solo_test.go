package remote_test

import (
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
)

// TestCrashSharedByACallIsRetried: a call in flight in a critical plugin's
// pre-execute filter when its process dies, not by the call's doing, is
// asked again in the next process and served, where before it was DENIED;
// the plugin is charged that one crash. Each transport fails the call in
// its own way when the process dies.
func TestCrashSharedByACallIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts remote.Options
	}{
		{"lanes", remote.Options{}},
		{"stream", remote.Options{NoCallLanes: true}},
		{"unary", remote.Options{UnaryCalls: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { testCrashShared(t, tc.opts) })
	}
}

func testCrashShared(t *testing.T, opts remote.Options) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, opts)
	mustLoad(t, h, conformance.PluginSpec{Name: "bystander", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{Name: "victim", Critical: true, Pre: []conformance.PreSpec{{
		Behaviour: conformance.PreHangFirstFilter, Tools: []string{"add"}, Log: "pre",
	}}}, pluginConfig{})

	done := make(chan pipeline.Result, 1)
	go func() { done <- call(ctx, h, "add", `{"a":1,"b":2}`) }()
	eventually(t, "the call in the victim's filter", 20*time.Second, func() bool { return len(h.Log("pre")) == 1 })
	h.Kill(t, "victim")
	h.Restart(t, "victim")
	select {
	case r := <-done:
		wantOK(t, r, "3")
	case <-ctx.Done():
		t.Fatal("the call in flight at the kill did not return")
	}
	if got := h.Log("pre"); len(got) != 2 {
		t.Errorf("the victim's filter logged %q; want the call asked twice", got)
	}
	if st, _ := status(h.m, "victim"); st.Restarts != 1 {
		t.Errorf("victim restarted %d times, want 1", st.Restarts)
	}
}

// TestGuardCrashSharedByACallIsRetried: the same for a critical plugin's
// guard (stage 2): the call in it when its process dies is asked again in
// the next process and served, where before it was DENIED.
func TestGuardCrashSharedByACallIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts remote.Options
	}{
		{"lanes", remote.Options{}},
		{"stream", remote.Options{NoCallLanes: true}},
		{"unary", remote.Options{UnaryCalls: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { testGuardCrashShared(t, tc.opts) })
	}
}

func testGuardCrashShared(t *testing.T, opts remote.Options) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, opts)
	mustLoad(t, h, conformance.PluginSpec{Name: "bystander", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{Name: "victim", Critical: true, Guards: []conformance.GuardSpec{{
		Behaviour: conformance.GuardHangFirst, Tools: []string{"add"}, Log: "guard",
	}}}, pluginConfig{})

	done := make(chan pipeline.Result, 1)
	go func() { done <- call(ctx, h, "add", `{"a":1,"b":2}`) }()
	eventually(t, "the call in the victim's guard", 20*time.Second, func() bool { return len(h.Log("guard")) == 1 })
	h.Kill(t, "victim")
	h.Restart(t, "victim")
	select {
	case r := <-done:
		wantOK(t, r, "3")
	case <-ctx.Done():
		t.Fatal("the call in flight at the kill did not return")
	}
	if got := h.Log("guard"); len(got) != 2 {
		t.Errorf("the victim's guard logged %q; want the call asked twice", got)
	}
	if st, _ := status(h.m, "victim"); st.Restarts != 1 {
		t.Errorf("victim restarted %d times, want 1", st.Restarts)
	}
}

// TestWrapperCrashSharedByACallIsRetried: the same for a critical plugin's
// wrapping pre-execute listener: the call in it when its process dies is
// asked again in the next process (with the rest of the chain run again
// through a new call token) and served, where before it was DENIED.
func TestWrapperCrashSharedByACallIsRetried(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts remote.Options
	}{
		{"lanes", remote.Options{}},
		{"stream", remote.Options{NoCallLanes: true}},
		{"unary", remote.Options{UnaryCalls: true}},
	} {
		t.Run(tc.name, func(t *testing.T) { testWrapperCrashShared(t, tc.opts) })
	}
}

func testWrapperCrashShared(t *testing.T, opts remote.Options) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, opts)
	mustLoad(t, h, conformance.PluginSpec{Name: "bystander", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{Name: "victim", Critical: true, Pre: []conformance.PreSpec{{
		Behaviour: conformance.PreHangFirstWrapper, Tools: []string{"add"}, Log: "wrap",
	}}}, pluginConfig{})

	done := make(chan pipeline.Result, 1)
	go func() { done <- call(ctx, h, "add", `{"a":1,"b":2}`) }()
	eventually(t, "the call in the victim's wrapper", 20*time.Second, func() bool { return len(h.Log("wrap")) == 1 })
	h.Kill(t, "victim")
	h.Restart(t, "victim")
	select {
	case r := <-done:
		wantOK(t, r, "3")
	case <-ctx.Done():
		t.Fatal("the call in flight at the kill did not return")
	}
	if got := h.Log("wrap"); len(got) != 2 {
		t.Errorf("the victim's wrapper logged %q; want the call asked twice", got)
	}
	if st, _ := status(h.m, "victim"); st.Restarts != 1 {
		t.Errorf("victim restarted %d times, want 1", st.Restarts)
	}
}
