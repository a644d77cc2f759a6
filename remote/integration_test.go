package remote_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/pipeline/policy"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/sandbox"
)

// TestCrossPluginService: a plugin that injects a service another plugin
// provides waits for it, calls it through the host (CallService), and is
// rebuilt (its apply runs again, in a new process) when the provider's
// process is killed and restarted.
func TestCrossPluginService(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})

	var mu sync.Mutex
	var consumerStates []kernel.State
	unlisten := h.k.Events().Listen(kernel.EventStateChanged, "test", func(ctx context.Context, payload any, _ kernel.Next) (any, error) {
		if sc, ok := payload.(kernel.StateChange); ok && sc.Plugin == "consumer" {
			mu.Lock()
			consumerStates = append(consumerStates, sc.To)
			mu.Unlock()
		}
		return nil, nil
	})
	defer unlisten()

	// The consumer is loaded first: it waits for index.
	mustLoad(t, h, conformance.PluginSpec{Name: "consumer"},
		pluginConfig{Control: "ctl", ApplyLog: "consumer_apply"}, `TESTPLUGIN_INJECT=["tools","index"]`)
	if st, _ := status(h.m, "consumer"); st.State != kernel.Pending {
		t.Fatalf("consumer is %v before index is provided, want PENDING", st.State)
	}
	wantCode(t, ctl(ctx, h, "ctl", map[string]any{"op": "pid"}), pipeline.CodeUnknownTool)

	mustLoad(t, h, conformance.PluginSpec{Name: "provider"}, pluginConfig{Provides: []string{"index"}}, `TESTPLUGIN_PROVIDES=["index"]`)
	if st, _ := status(h.m, "consumer"); st.State != kernel.Active {
		t.Fatalf("consumer is %v once index is provided, want ACTIVE", st.State)
	}
	provider := pidOf(t, h.m, "provider")
	consumer := pidOf(t, h.m, "consumer")
	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "call", "service": "index", "method": "whoami"}), `"provider"`)
	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "call", "service": "index", "method": "pid"}), strconv.Itoa(provider))
	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "call", "service": "index", "method": "echo", "args": map[string]int{"n": 7}}), `{"n":7}`)
	wantCode(t, ctl(ctx, h, "ctl", map[string]any{"op": "call", "service": "index", "method": "nope"}), pipeline.CodeToolError, `no method "nope"`)
	wantCode(t, ctl(ctx, h, "ctl", map[string]any{"op": "call", "service": "points", "method": "all"}), pipeline.CodeToolError, "not injected")

	if err := syscall.Kill(provider, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitActive(h.m, h.k, "provider", provider, 20*time.Second); err != nil {
		t.Fatalf("provider: %v", err)
	}
	if err := waitActive(h.m, h.k, "consumer", consumer, 20*time.Second); err != nil {
		t.Fatalf("consumer: %v", err)
	}
	provider2, consumer2 := pidOf(t, h.m, "provider"), pidOf(t, h.m, "consumer")
	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "call", "service": "index", "method": "pid"}), strconv.Itoa(provider2))

	applies := readLog(h.dir + "/consumer_apply.log")
	if want := []string{"apply " + strconv.Itoa(consumer), "apply " + strconv.Itoa(consumer2)}; !slices.Equal(applies, want) {
		t.Errorf("consumer's applies = %q, want %q (rebuilt once, in a new process)", applies, want)
	}
	mu.Lock()
	states := slices.Clone(consumerStates)
	mu.Unlock()
	rebuilt := []kernel.State{kernel.Active, kernel.Unloading, kernel.Pending, kernel.Loading, kernel.Active}
	if !containsRun(states, rebuilt) {
		t.Errorf("consumer's states = %v, want the run %v (back to PENDING, then loaded again)", states, rebuilt)
	}
	if st, _ := status(h.m, "consumer"); st.Restarts != 0 {
		t.Errorf("the consumer counts %d crashes; a rebuild is not a crash", st.Restarts)
	}
}

// containsRun says whether run appears in s as consecutive elements.
func containsRun[T comparable](s, run []T) bool {
	for i := 0; i+len(run) <= len(s); i++ {
		if slices.Equal(s[i:i+len(run)], run) {
			return true
		}
	}
	return false
}

// TestDeadlinesAndCancellation: deadlines and cancellation cross the
// process boundary both ways: host → plugin, and plugin → host → another
// plugin when a plugin calls a tool through the host.
func TestDeadlinesAndCancellation(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	if _, err := h.k.Load(policy.Timeout()); err != nil {
		t.Fatal(err)
	}
	mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{
		{Name: "hang", Description: "Sleeps a minute.", Body: conformance.BodySleep, Sleep: time.Minute, Log: "hang"},
		{Name: "slow", Description: "Sleeps a second.", Timeout: 50 * time.Millisecond, Body: conformance.BodySleep, Sleep: time.Second, Log: "slow"},
	}}, pluginConfig{Control: "pctl"})
	mustLoad(t, h, conformance.PluginSpec{Name: "Q"}, pluginConfig{Control: "qctl"})

	waitEntry := func(t *testing.T, log, entry string) {
		t.Helper()
		eventually(t, "log "+log+" to hold "+entry, 10*time.Second, func() bool {
			return slices.Contains(readLog(h.dir+"/"+log+".log"), entry)
		})
	}
	count := func(log, entry string) int {
		n := 0
		for _, e := range readLog(h.dir + "/" + log + ".log") {
			if e == entry {
				n++
			}
		}
		return n
	}

	t.Run("caller_cancel_reaches_the_body", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		ch := make(chan pipeline.Result, 1)
		go func() { ch <- call(cctx, h, "hang", `{}`) }()
		waitEntry(t, "hang", "run")
		start := time.Now()
		cancel()
		r := <-ch
		wantCode(t, r, pipeline.CodeAborted)
		if d := time.Since(start); d > 2*time.Second {
			t.Errorf("the cancelled call returned %v after the cancel", d)
		}
		waitEntry(t, "hang", "cancelled")
	})
	t.Run("timeout_policy_cancels_the_body", func(t *testing.T) {
		start := time.Now()
		wantCode(t, call(ctx, h, "slow", `{}`), pipeline.CodeToolTimeout, "slow exceeded 50ms")
		if d := time.Since(start); d > 900*time.Millisecond {
			t.Errorf("the timed-out call took %v (the body sleeps 1s)", d)
		}
		waitEntry(t, "slow", "cancelled")
	})
	t.Run("deadline_reaches_the_plugin", func(t *testing.T) {
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		r := ctl(dctx, h, "pctl", map[string]any{"op": "deadline"})
		wantOK(t, r, "")
		if ms, _ := strconv.Atoi(valueOf(r)); ms <= 0 || ms > 5000 {
			t.Errorf("the plugin saw %s ms left, want (0, 5000]", valueOf(r))
		}
		nctx, ncancel := context.WithCancel(context.Background())
		defer ncancel()
		wantOK(t, ctl(nctx, h, "pctl", map[string]any{"op": "deadline"}), "-1")
	})
	t.Run("deadline_crosses_two_hops", func(t *testing.T) {
		// client → Q's tool → host pipeline (caller Q) → P's tool.
		dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		r := ctl(dctx, h, "qctl", map[string]any{"op": "execute", "tool": "pctl", "args": map[string]string{"op": "deadline"}})
		wantOK(t, r, "")
		var inner struct {
			OK    bool
			Value json.RawMessage
		}
		if err := json.Unmarshal(r.Value.(json.RawMessage), &inner); err != nil || !inner.OK {
			t.Fatalf("inner result %s: %v", valueOf(r), err)
		}
		if ms, _ := strconv.Atoi(string(inner.Value)); ms <= 0 || ms > 5000 {
			t.Errorf("P saw %s ms left through Q, want (0, 5000]", inner.Value)
		}
	})
	t.Run("cancellation_crosses_back", func(t *testing.T) {
		// The client cancels its call of Q's tool, which is waiting for P's
		// hang through the host: the cancellation goes host → Q → host → P.
		before := count("hang", "cancelled")
		runs := count("hang", "run")
		cctx, cancel := context.WithCancel(ctx)
		ch := make(chan pipeline.Result, 1)
		go func() {
			ch <- ctl(cctx, h, "qctl", map[string]any{"op": "execute", "tool": "hang", "args": map[string]any{}})
		}()
		eventually(t, "hang to run through Q", 10*time.Second, func() bool { return count("hang", "run") > runs })
		cancel()
		wantCode(t, <-ch, pipeline.CodeAborted)
		eventually(t, "P's body to be cancelled", 10*time.Second, func() bool { return count("hang", "cancelled") > before })
		eventually(t, "the inner call's audit", 10*time.Second, func() bool {
			recs := h.audit.Records()
			return len(recs) > 0 && slices.ContainsFunc(recs, func(r conformance.AuditRecord) bool {
				return r.Tool == "hang" && r.Code == pipeline.CodeAborted
			})
		})
	})
}

// TestOversizedMessages: with a small message limit, a tool result or
// arguments over it give a clear TOOL_ERROR, and the plugin keeps serving.
func TestOversizedMessages(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	const limit = 64 << 10
	h := newHost(t, conformance.Config{}, remote.Options{MaxMessageBytes: limit})
	mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{echoTool("echo")}}, pluginConfig{Control: "ctl"})
	pid := pidOf(t, h.m, "P")

	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "blob", "n": 1000}), `"`+strings.Repeat("x", 1000)+`"`)
	r := ctl(ctx, h, "ctl", map[string]any{"op": "blob", "n": 2 * limit})
	wantCode(t, r, pipeline.CodeToolError, `result of tool "ctl"`, fmt.Sprintf("over the %d-byte message limit", limit))
	t.Logf("oversized result: %s", r.Error.Message)

	r = call(ctx, h, "echo", `{"x":"`+strings.Repeat("y", 2*limit)+`"}`)
	wantCode(t, r, pipeline.CodeToolError, "plugin P", fmt.Sprintf("%d-byte limit", limit))
	t.Logf("oversized arguments: %s", r.Error.Message)

	wantOK(t, call(ctx, h, "echo", `{"x":1}`), `{"x":1}`)
	if got := pidOf(t, h.m, "P"); got != pid {
		t.Errorf("P's process changed (%d → %d)", pid, got)
	}
}

// TestInterestFilters: a remote guard or listener registered for tool x gets
// no RPC for tool y (its handler would log it).
func TestInterestFilters(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	only := []string{"x"}
	mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{echoTool("x"), echoTool("y")}}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{
		Name:      "watcher",
		Pre:       []conformance.PreSpec{{Behaviour: conformance.PrePass, Tools: only, Log: "pre"}},
		Guards:    []conformance.GuardSpec{{Behaviour: conformance.GuardSilent, Tools: only, Log: "guard"}},
		Exec:      []conformance.ExecSpec{{Behaviour: conformance.ExecRecord, Tools: only, Log: "exec"}},
		Post:      []conformance.PostSpec{{Behaviour: conformance.PostPass, Tools: only, Log: "post"}},
		Observers: []conformance.ObserverSpec{{Behaviour: conformance.ObserveRecord, Tools: only, Log: "obs"}},
	}, pluginConfig{})
	for range 5 {
		wantOK(t, call(ctx, h, "y", `{"n":1}`), `{"n":1}`)
	}
	wantOK(t, call(ctx, h, "x", `{"n":2}`), `{"n":2}`)
	// The observer's log is waited for: results reach it after the caller.
	want := map[string][]string{"pre": {"called"}, "guard": {"called"}, "exec": {"start", "end ok"}, "post": {"called"}, "obs": {"x ok"}}
	for log, entries := range want {
		if got := h.Log(log); !slices.Equal(got, entries) {
			t.Errorf("log %s = %q, want %q (nothing for y)", log, got, entries)
		}
	}
}

// TestObserversOrderAndDrain: a slow remote stage-5 observer receives every
// result in call order without holding up the callers, and everything
// queued for it is delivered before a graceful unload completes.
func TestObserversOrderAndDrain(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	const n = 20
	const obsSleep = 25 * time.Millisecond
	var tools []conformance.ToolSpec
	var want []string
	for i := range n {
		name := fmt.Sprintf("t%02d", i)
		tools = append(tools, echoTool(name))
		want = append(want, name+" ok")
	}
	mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: tools}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{Name: "auditor", Observers: []conformance.ObserverSpec{{
		Behaviour: conformance.ObserveRecord, Sleep: obsSleep, Log: "obs",
	}}}, pluginConfig{})

	start := time.Now()
	for i := range n {
		wantOK(t, call(ctx, h, fmt.Sprintf("t%02d", i), `{}`), `{}`)
	}
	took := time.Since(start)
	if took >= n*obsSleep/2 {
		t.Errorf("%d calls took %v: the observer (%v a result) held up the callers", n, took, obsSleep)
	}
	queued := len(readLog(h.dir + "/obs.log"))
	h.Unload(t, "auditor")
	if got := readLog(h.dir + "/obs.log"); !slices.Equal(got, want) {
		t.Errorf("after the unload the observer had seen %q, want %q", got, want)
	}
	t.Logf("%d calls took %v; %d of %d results were still queued at the unload", n, took, n-queued, n)
}

// TestPanickingHandlers: handlers that panic in every stage cost their call
// (with the contract's code) and the plugin keeps serving, in the same
// process.
func TestPanickingHandlers(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{
		Name: "fragile",
		Tools: []conformance.ToolSpec{
			addTool(""), echoTool("g"), echoTool("p"), echoTool("q"),
			{Name: "boom", Description: "Panics.", Body: conformance.BodyPanic, Message: "boom"},
		},
		Pre:       []conformance.PreSpec{{Behaviour: conformance.PrePanic, Tools: []string{"p"}}},
		Guards:    []conformance.GuardSpec{{Behaviour: conformance.GuardPanic, Tools: []string{"g"}}},
		Post:      []conformance.PostSpec{{Behaviour: conformance.PostPanic, Tools: []string{"q"}}},
		Observers: []conformance.ObserverSpec{{Behaviour: conformance.ObservePanic, Log: "obs"}},
	}, pluginConfig{})
	pid := pidOf(t, h.m, "fragile")
	for range 2 {
		wantCode(t, call(ctx, h, "boom", `{}`), pipeline.CodeToolError, "boom")
		wantCode(t, call(ctx, h, "p", `{}`), pipeline.CodeDenied, "pre-execute listener of fragile failed", "panic")
		wantCode(t, call(ctx, h, "g", `{}`), pipeline.CodeDenied, "guard of fragile failed", "panic")
		wantCode(t, call(ctx, h, "q", `{}`), pipeline.CodeBlocked, "post-execute listener of fragile failed", "panic")
		wantOK(t, call(ctx, h, "add", `{"a":2,"b":3}`), "5")
	}
	if got := h.Log("obs"); len(got) != 10 {
		t.Errorf("the panicking observer logged %d results, want 10", len(got))
	}
	st, _ := status(h.m, "fragile")
	if st.PID != pid || st.Restarts != 0 || st.State != kernel.Active {
		t.Errorf("fragile after the panics: %s, want ACTIVE in process %d, no restart", describeStatus(st), pid)
	}
}

// TestDisposeOneRegistration: a plugin disposes one of its registrations
// while it runs; only that one goes.
func TestDisposeOneRegistration(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{
		Name:   "D",
		Tools:  []conformance.ToolSpec{echoTool("a"), echoTool("b")},
		Guards: []conformance.GuardSpec{{Behaviour: conformance.GuardDenyAll, Reason: "no b", Tools: []string{"b"}}},
	}, pluginConfig{Control: "ctl"})
	wantOK(t, call(ctx, h, "a", `{}`), `{}`)
	wantCode(t, call(ctx, h, "b", `{}`), pipeline.CodeDenied, "no b")

	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "dispose", "key": "guard:0"}), `"disposed"`)
	wantOK(t, call(ctx, h, "b", `{}`), `{}`)
	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "dispose", "key": "tool:a"}), `"disposed"`)
	wantCode(t, call(ctx, h, "a", `{}`), pipeline.CodeUnknownTool)
	wantOK(t, call(ctx, h, "b", `{}`), `{}`)
	wantCode(t, ctl(ctx, h, "ctl", map[string]any{"op": "dispose", "key": "tool:a"}), pipeline.CodeToolError, "no registration")
	if st, _ := status(h.m, "D"); !slices.Equal(st.Tools, []string{"b", "ctl"}) {
		t.Errorf("D's tools = %q, want [b ctl]", st.Tools)
	}
}

// TestRegistrationsAfterApply: registrations made after the apply step (from
// a goroutine, and from inside a call) are effects of the plugin's scope
// like the others: they work, and they go with the plugin.
func TestRegistrationsAfterApply(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{Name: "L"}, pluginConfig{Control: "ctl", LateTools: []conformance.ToolSpec{echoTool("late_bg")}})
	eventually(t, "late_bg to be registered", 10*time.Second, func() bool {
		_, ok := h.tools.Lookup("late_bg")
		return ok
	})
	wantOK(t, call(ctx, h, "late_bg", `{"n":1}`), `{"n":1}`)
	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "register", "name": "late_call"}), "")
	wantOK(t, call(ctx, h, "late_call", `{"n":2}`), `{"n":2}`)
	for _, name := range []string{"late_bg", "late_call"} {
		if info, ok := h.tools.Lookup(name); !ok || info.Owner != "L" {
			t.Errorf("%s: owner %q (registered %v), want L", name, info.Owner, ok)
		}
	}
	h.Unload(t, "L")
	wantCode(t, call(ctx, h, "late_bg", `{}`), pipeline.CodeUnknownTool)
	wantCode(t, call(ctx, h, "late_call", `{}`), pipeline.CodeUnknownTool)
}

// TestProbe: Probe starts a plugin only to describe it, and stops it.
func TestProbe(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	before := pluginPids(testPlugin)
	desc, err := h.m.Probe(ctx, remote.Spec{Name: "probe", Path: testPlugin, Env: []string{
		`TESTPLUGIN_INJECT=["tools","index"]`, `TESTPLUGIN_PROVIDES=["search"]`,
	}})
	if err != nil {
		t.Fatalf("probe: %v", err)
	}
	if desc.GetName() != "testplugin" || !slices.Equal(desc.GetInject(), []string{"tools", "index"}) ||
		!slices.Equal(desc.GetProvides(), []string{"search"}) || string(desc.GetConfigSchemaJson()) != `{"type":"object"}` || desc.GetSdkVersion() == "" {
		t.Errorf("probe = %v", desc)
	}
	if left := waitNoNewPlugins(before, 2*time.Second); len(left) > 0 {
		t.Errorf("the probed process is still running: %v", left)
	}
	if _, ok := status(h.m, "probe"); ok {
		t.Error("a probed plugin is managed")
	}
	if _, ok := h.k.Scope("probe"); ok {
		t.Error("a probed plugin has a scope")
	}
	if _, err := h.m.Probe(ctx, remote.Spec{Name: "missing", Path: testPlugin + "-missing"}); err == nil {
		t.Error("probing a missing binary succeeded")
	}
}

// waitNoNewPlugins waits until no test plugin runs that did not in before,
// and returns the ones that still do.
func waitNoNewPlugins(before []int, d time.Duration) []int {
	var left []int
	testkit.Eventually(d, func() bool {
		left = slices.DeleteFunc(pluginPids(testPlugin), func(pid int) bool { return slices.Contains(before, pid) })
		return len(left) == 0
	})
	return left
}

// TestChecksum: a pinned checksum that matches starts the plugin; one that
// does not refuses to start it, and nothing is left running or registered.
func TestChecksum(t *testing.T) { testChecksum(t, nil) }

// TestChecksumSandboxed: the same for a sandboxed plugin, whose binary is
// checked before the launcher starts (go-plugin would check the launcher).
func TestChecksumSandboxed(t *testing.T) { testChecksum(t, testSandbox(t.TempDir())) }

func testChecksum(t *testing.T, sb *sandbox.Policy) {
	ctx := testkit.ContextFor(t, time.Minute)
	f, err := os.Open(testPlugin)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.New()
	_, err = io.Copy(sum, f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	good := hex.EncodeToString(sum.Sum(nil))
	bad := strings.Repeat("0", len(good))
	cfg, _ := json.Marshal(pluginConfig{Spec: conformance.PluginSpec{Name: "pinned", Tools: []conformance.ToolSpec{addTool("")}}})

	h := newHost(t, conformance.Config{}, remote.Options{})
	if err := h.m.Load(ctx, remote.Spec{Name: "pinned", Path: testPlugin, Sandbox: sb, SHA256: good, Config: cfg}); err != nil {
		t.Fatalf("load with the right checksum: %v", err)
	}
	wantOK(t, call(ctx, h, "add", `{"a":2,"b":3}`), "5")
	h.Unload(t, "pinned")

	before := pluginPids(testPlugin)
	err = h.m.Load(ctx, remote.Spec{Name: "pinned", Path: testPlugin, Sandbox: sb, SHA256: bad, Config: cfg})
	if err == nil || !strings.Contains(strings.ToLower(err.Error()), "checksum") {
		t.Fatalf("load with a wrong checksum: err = %v, want a checksum error", err)
	}
	t.Logf("wrong checksum: %v", err)
	if left := waitNoNewPlugins(before, time.Second); len(left) > 0 {
		t.Errorf("a process runs after the checksum was refused: %v", left)
	}
	if _, ok := status(h.m, "pinned"); ok {
		t.Error("the refused plugin is managed")
	}
	wantCode(t, call(ctx, h, "add", `{"a":2,"b":3}`), pipeline.CodeUnknownTool)

	if err := h.m.Load(ctx, remote.Spec{Name: "pinned", Path: testPlugin, Sandbox: sb, SHA256: "not hex", Config: cfg}); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("load with a malformed checksum: err = %v", err)
	}
	// The name is free again after each refusal.
	if err := h.m.Load(ctx, remote.Spec{Name: "pinned", Path: testPlugin, Sandbox: sb, SHA256: good, Config: cfg}); err != nil {
		t.Fatalf("load again with the right checksum: %v", err)
	}
	wantOK(t, call(ctx, h, "add", `{"a":2,"b":3}`), "5")
}

// TestStdoutNoise: a plugin that writes to stdout all the time (through
// the stdout it started with, os.Stdout and fd 1) starts, serves, and stops
// like any other.
func TestStdoutNoise(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	for i := range 3 {
		name := fmt.Sprintf("noisy%d", i)
		tool := conformance.ToolSpec{Name: "add" + strconv.Itoa(i), Description: "Adds.", Parameters: addSchema, Body: conformance.BodyAdd}
		mustLoad(t, h, conformance.PluginSpec{Name: name, Tools: []conformance.ToolSpec{tool}}, pluginConfig{Control: "ctl" + strconv.Itoa(i)}, "TESTPLUGIN_NOISE=1")
	}
	for i := range 100 {
		wantOK(t, call(ctx, h, "add"+strconv.Itoa(i%3), `{"a":2,"b":3}`), "5")
		if i%10 == 0 {
			wantOK(t, ctl(ctx, h, "ctl"+strconv.Itoa(i%3), map[string]any{"op": "noise"}), `"ok"`)
		}
	}
	h.Unload(t, "noisy0")
	wantCode(t, call(ctx, h, "add0", `{"a":2,"b":3}`), pipeline.CodeUnknownTool)
	wantOK(t, call(ctx, h, "add1", `{"a":2,"b":3}`), "5")
}

// TestStdoutBeforeServe: a plugin that prints to stdout before it calls
// sdk.Serve (in an init function, in main, by fd number) still completes
// the handshake and serves: the SDK protects stdout from its own init when
// a host launched the process.
func TestStdoutBeforeServe(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	for i := range 3 {
		tool := conformance.ToolSpec{Name: "add" + strconv.Itoa(i), Description: "Adds.", Parameters: addSchema, Body: conformance.BodyAdd}
		mustLoad(t, h, conformance.PluginSpec{Name: fmt.Sprintf("early%d", i), Tools: []conformance.ToolSpec{tool}}, pluginConfig{}, "TESTPLUGIN_EARLY_NOISE=1")
		wantOK(t, call(ctx, h, "add"+strconv.Itoa(i), `{"a":2,"b":3}`), "5")
	}
}

// TestLongSocketFolder: a socket folder base too long for a Unix socket's
// path (107 bytes, with go-plugin's folder and socket names below it) is
// replaced by /tmp rather than making every plugin fail to start.
func TestLongSocketFolder(t *testing.T) {
	long := filepath.Join(t.TempDir(), strings.Repeat("a-long-folder-name", 4))
	if err := os.MkdirAll(long, 0o700); err != nil {
		t.Fatal(err)
	}
	h := newHost(t, conformance.Config{}, remote.Options{SocketDir: long})
	mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	wantOK(t, call(testkit.ContextFor(t, 10*time.Second), h, "add", `{"a":2,"b":3}`), "5")
}
