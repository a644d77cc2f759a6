package remote_test

import (
	"context"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
)

// load runs callers goroutines that call tool with args in a loop until
// stop is closed, and counts what came back.
type load struct {
	ok     atomic.Int64
	failed atomic.Int64
	mu     sync.Mutex
	first  []string // the first few failures, described
	ids    []string // of every call that returned
	wg     sync.WaitGroup
	stop   chan struct{}
}

func startLoad(ctx context.Context, h *processHost, callers int, tool, args string) *load {
	l := &load{stop: make(chan struct{})}
	for range callers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				r := call(cctx, h, tool, args)
				cancel()
				l.mu.Lock()
				l.ids = append(l.ids, r.ID)
				l.mu.Unlock()
				if r.OK {
					l.ok.Add(1)
					continue
				}
				l.failed.Add(1)
				l.mu.Lock()
				if len(l.first) < 5 {
					l.first = append(l.first, describe(r))
				}
				l.mu.Unlock()
			}
		}()
	}
	return l
}

// halt stops the callers.
func (l *load) halt() {
	close(l.stop)
	l.wg.Wait()
}

// end stops the callers and fails t if any call failed.
func (l *load) end(t *testing.T) {
	t.Helper()
	l.halt()
	t.Logf("%d calls ok, %d failed", l.ok.Load(), l.failed.Load())
	if n := l.failed.Load(); n > 0 {
		t.Fatalf("%d calls failed during the reloads; the first: %q", n, l.first)
	}
	if l.ok.Load() == 0 {
		t.Fatal("no call completed")
	}
}

// reloadPlugin reloads name and checks that a new process serves it.
func reloadPlugin(t *testing.T, ctx context.Context, h *processHost, name string) {
	t.Helper()
	before := pidOf(t, h.m, name)
	if err := h.m.Reload(ctx, name); err != nil {
		t.Fatalf("reload %s: %v", name, err)
	}
	if after := pidOf(t, h.m, name); after == before {
		t.Fatalf("reload %s: still process %d", name, before)
	}
}

func TestReloadUnderLoad(t *testing.T) { testReloadUnderLoad(t, false) }

// TestReloadUnderLoadPython: the same with both plugins written in Python
// (internal/testkit/pytestplugin): a reload starts the new process, applies it and
// stops the old one without failing a call.
func TestReloadUnderLoadPython(t *testing.T) { testReloadUnderLoad(t, true) }

func testReloadUnderLoad(t *testing.T, python bool) {
	ctx := testkit.ContextFor(t, 2*time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	if python {
		h.binary = pythonPlugin(t)
	}
	// The tool's owner has a stage-1 listener and a guard of its own; a
	// critical guard plugin sits in front of every call.
	mustLoad(t, h, conformance.PluginSpec{
		Name:   "worker",
		Tools:  []conformance.ToolSpec{addTool("")},
		Pre:    []conformance.PreSpec{{Behaviour: conformance.PrePass}},
		Guards: []conformance.GuardSpec{{Behaviour: conformance.GuardDenyWhenGreater, Field: "a", Limit: 100, Reason: "a is over 100"}},
	}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{
		Name:     "policy",
		Critical: true,
		Guards:   []conformance.GuardSpec{{Behaviour: conformance.GuardDenyWhenGreater, Field: "b", Limit: 100, Reason: "b is over 100"}},
	}, pluginConfig{})

	l := startLoad(ctx, h, 32, "add", `{"a":2,"b":3}`)
	for i := range 3 {
		for _, name := range []string{"worker", "policy"} {
			start := time.Now()
			reloadPlugin(t, ctx, h, name)
			t.Logf("reload %d of %s took %v", i+1, name, time.Since(start))
		}
	}
	l.end(t)
	// The rules of the new versions apply.
	wantCode(t, call(ctx, h, "add", `{"a":200,"b":1}`), pipeline.CodeDenied, "a is over 100")
	wantCode(t, call(ctx, h, "add", `{"a":1,"b":200}`), pipeline.CodeDenied, "b is over 100")
}

func TestReloadToABinaryThatCrashes(t *testing.T) {
	ctx := testkit.ContextFor(t, 2*time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	p := conformance.PluginSpec{Name: "worker", Tools: []conformance.ToolSpec{addTool("")}}
	mustLoad(t, h, p, pluginConfig{})
	pid := pidOf(t, h.m, "worker")

	l := startLoad(ctx, h, 32, "add", `{"a":2,"b":3}`)
	err := h.m.Replace(ctx, h.spec(t, p, pluginConfig{CrashOnApply: "fatal: the new version cannot start"}, nil))
	time.Sleep(100 * time.Millisecond) // calls after the failed reload too
	l.end(t)
	if err == nil {
		t.Fatal("a reload to a version that crashes at start succeeded")
	}
	t.Logf("reload error: %v", err)
	if !strings.Contains(err.Error(), "keeps serving") {
		t.Errorf("the error does not say the old version keeps serving: %v", err)
	}
	if got := pidOf(t, h.m, "worker"); got != pid {
		t.Fatalf("worker runs in process %d, want the old %d", got, pid)
	}
	// The failed spec was not kept: a plain reload starts the old one again.
	reloadPlugin(t, ctx, h, "worker")
	wantOK(t, call(ctx, h, "add", `{"a":2,"b":3}`), "5")
}

func TestReloadRebuildsDependents(t *testing.T) {
	ctx := testkit.ContextFor(t, 2*time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{Name: "provider"}, pluginConfig{Provides: []string{"index"}}, `TESTPLUGIN_PROVIDES=["index"]`)
	mustLoad(t, h, conformance.PluginSpec{Name: "consumer"}, pluginConfig{Control: "ctl"}, `TESTPLUGIN_INJECT=["tools","index"]`)
	provider, consumer := pidOf(t, h.m, "provider"), pidOf(t, h.m, "consumer")

	// Calls of the consumer's tool reach the provider's service.
	l := startLoad(ctx, h, 32, "ctl", `{"op":"call","service":"index","method":"whoami"}`)
	reloadPlugin(t, ctx, h, "provider")
	l.end(t)

	provider2, consumer2 := pidOf(t, h.m, "provider"), pidOf(t, h.m, "consumer")
	if provider2 == provider || consumer2 == consumer {
		t.Fatalf("provider %d→%d, consumer %d→%d: both should run in new processes", provider, provider2, consumer, consumer2)
	}
	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "call", "service": "index", "method": "pid"}), strconv.Itoa(provider2))
}

func TestCallsToARestartingPluginSaySo(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{Name: "victim", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	h.Kill(t, "victim") // the gate keeps its next process from applying
	eventually(t, "the tool to go", 10*time.Second, func() bool {
		_, ok := h.tools.Lookup("add")
		return !ok
	})
	wantCode(t, call(ctx, h, "add", `{"a":1,"b":2}`), pipeline.CodeToolError, "plugin victim is restarting")
	h.Restart(t, "victim")
	wantOK(t, call(ctx, h, "add", `{"a":1,"b":2}`), "3")
	// Unloaded on purpose: the tool is simply unknown.
	h.Unload(t, "victim")
	wantCode(t, call(ctx, h, "add", `{"a":1,"b":2}`), pipeline.CodeUnknownTool)
}

// BenchmarkReload is one plugin's reload, from the request to the new
// process serving (the swap; stopping the old process afterwards is not
// timed). Compare with BenchmarkPluginStart.
func BenchmarkReload(b *testing.B) {
	h := newBareHost(b, conformance.Config{}, remote.Options{})
	mustLoad(b, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		old := pidOf(b, h.m, "P")
		done := make(chan error, 1)
		go func() { done <- h.m.Reload(ctx, "P") }()
		// Status shows the new process from the moment of the swap.
		for {
			if st, _ := status(h.m, "P"); st.PID != 0 && st.PID != old {
				break
			}
			select {
			case err := <-done:
				b.Fatalf("reload returned before the swap was seen: %v", err)
			default:
			}
			time.Sleep(50 * time.Microsecond)
		}
		b.StopTimer()
		if err := <-done; err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkThroughputDuringReload reports calls per second of 32 callers
// while the tool's plugin is reloaded back to back, beside the same callers'
// steady rate measured first in the same run (reload_throughput_ratio).
func BenchmarkThroughputDuringReload(b *testing.B) {
	h := newBareHost(b, conformance.Config{}, remote.Options{})
	mustLoad(b, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	ctx := context.Background()
	rate := func(d time.Duration, during func()) float64 {
		var n, failed atomic.Int64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for range 32 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					select {
					case <-stop:
						return
					default:
					}
					if call(ctx, h, "add", `{"a":1,"b":2}`).OK {
						n.Add(1)
					} else {
						failed.Add(1)
					}
				}
			}()
		}
		start := time.Now()
		if during != nil {
			during()
		}
		if rest := d - time.Since(start); rest > 0 {
			time.Sleep(rest)
		}
		close(stop)
		wg.Wait()
		if failed.Load() > 0 {
			b.Fatalf("%d calls failed", failed.Load())
		}
		return float64(n.Load()) / time.Since(start).Seconds()
	}
	b.ResetTimer()
	for b.Loop() {
		steady := rate(time.Second, nil)
		reloads := 0
		during := rate(time.Second, func() {
			deadline := time.Now().Add(time.Second)
			for time.Now().Before(deadline) {
				if err := h.m.Reload(ctx, "P"); err != nil {
					b.Fatal(err)
				}
				reloads++
			}
		})
		b.ReportMetric(steady, "steady_calls/s")
		b.ReportMetric(during, "reloading_calls/s")
		b.ReportMetric(during/steady, "reload_throughput_ratio")
		b.ReportMetric(float64(reloads), "reloads")
	}
}

// seenOnce checks that the observer log holds each id exactly once, and that
// it holds nothing else.
func seenOnce(t *testing.T, path string, ids []string) {
	t.Helper()
	count := map[string]int{}
	for _, line := range readLog(path) {
		id, _, _ := strings.Cut(line, " ")
		count[id]++
	}
	lost, doubled := 0, 0
	for _, id := range ids {
		switch count[id] {
		case 0:
			lost++
		case 1:
		default:
			doubled++
		}
		delete(count, id)
	}
	t.Logf("%d calls returned; the observer lost %d, doubled %d, and saw %d calls that did not return", len(ids), lost, doubled, len(count))
	if lost > 0 || doubled > 0 || len(count) > 0 {
		t.Fatal("a critical observer must see every call that returned exactly once")
	}
}

func TestCriticalObserverSeesEveryCall(t *testing.T) {
	ctx := testkit.ContextFor(t, 2*time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{Name: "worker", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	recorder := conformance.PluginSpec{
		Name:      "recorder",
		Critical:  true,
		Observers: []conformance.ObserverSpec{{Behaviour: conformance.ObserveRecordID, Log: "seen"}},
	}

	t.Run("across reloads", func(t *testing.T) {
		mustLoad(t, h, recorder, pluginConfig{})
		l := startLoad(ctx, h, 32, "add", `{"a":2,"b":3}`)
		for range 3 {
			reloadPlugin(t, ctx, h, "recorder")
		}
		l.end(t)
		h.Unload(t, "recorder") // delivers what is queued first
		seenOnce(t, h.dir+"/seen.log", l.ids)
	})

	t.Run("across a crash", func(t *testing.T) {
		// The test plugin's observer does not skip a result it already
		// logged, as the audit plugin does; a crash mid-batch may double
		// a few, so only losses are counted here.
		os.Remove(h.dir + "/seen.log")
		mustLoad(t, h, recorder, pluginConfig{})
		l := startLoad(ctx, h, 32, "add", `{"a":2,"b":3}`)
		time.Sleep(300 * time.Millisecond)
		pid := pidOf(t, h.m, "recorder")
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		if err := waitActive(h.m, h.k, "recorder", pid, 20*time.Second); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
		l.halt()
		h.Unload(t, "recorder")
		count := map[string]int{}
		for _, line := range readLog(h.dir + "/seen.log") {
			id, _, _ := strings.Cut(line, " ")
			count[id]++
		}
		lost, doubled, denied := 0, 0, 0
		for _, id := range l.ids {
			if count[id] == 0 {
				lost++
			}
			if count[id] > 1 {
				doubled++
			}
		}
		for _, line := range readLog(h.dir + "/seen.log") {
			if strings.HasSuffix(line, " DENIED") {
				denied++
			}
		}
		t.Logf("%d calls returned (%d seen as DENIED while the recorder was down); lost %d, doubled %d", len(l.ids), denied, lost, doubled)
		if lost > 0 {
			t.Fatalf("%d results lost across the crash", lost)
		}
		if denied == 0 {
			t.Error("no call was seen DENIED: the crash did not hold calls, or the held calls were not observed")
		}
	})
}

func TestReloadChecksIntegrity(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	p := conformance.PluginSpec{Name: "worker", Tools: []conformance.ToolSpec{addTool("")}}
	mustLoad(t, h, p, pluginConfig{})
	pid := pidOf(t, h.m, "worker")
	spec := h.spec(t, p, pluginConfig{}, nil)
	spec.SHA256 = strings.Repeat("ab", 32) // not the binary's
	err := h.m.Replace(ctx, spec)
	if err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a reload to a binary that does not match its pin: %v, want a checksum error", err)
	}
	if got := pidOf(t, h.m, "worker"); got != pid {
		t.Fatalf("worker runs in process %d, want the old %d", got, pid)
	}
	wantOK(t, call(ctx, h, "add", `{"a":2,"b":3}`), "5")
}

// An operator who fixes a crash-looping plugin reloads it while it waits out
// its backoff: the wait is cut short and the fixed version starts.
func TestReloadDuringCrashLoopBackoff(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	p := conformance.PluginSpec{Name: "worker", Tools: []conformance.ToolSpec{addTool("")}}
	spec := h.spec(t, p, pluginConfig{CrashAfterApply: "worker: fatal: lost its database"}, nil)
	spec.Restart = remote.RestartPolicy{Attempts: 10, Window: time.Minute, Backoff: time.Minute, MaxBackoff: time.Minute}
	if err := h.m.Load(ctx, spec); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the crash and the start of the backoff", 10*time.Second, func() bool {
		st, _ := status(h.m, "worker")
		return st.Restarts == 1 && st.State == kernel.Loading
	})
	wantCode(t, call(ctx, h, "add", `{"a":2,"b":3}`), pipeline.CodeToolError, "plugin worker is restarting", "exit status 3")
	start := time.Now()
	if err := h.m.Replace(ctx, h.spec(t, p, pluginConfig{}, nil)); err != nil {
		t.Fatal(err)
	}
	t.Logf("the fixed version served %v after the reload was asked (the backoff was a minute)", time.Since(start))
	wantOK(t, call(ctx, h, "add", `{"a":2,"b":3}`), "5")
}

// An unload waits for the calls still running in its process (up to the
// drain timeout), but the kernel's lifecycle does not wait with it: another
// plugin that crashes meanwhile comes back at once.
func TestUnloadDrainDoesNotHoldOtherPlugins(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{DrainTimeout: 2 * time.Second})
	mustLoad(t, h, conformance.PluginSpec{Name: "leaving", Tools: []conformance.ToolSpec{
		{Name: "hang", Description: "Sleeps a minute.", Body: conformance.BodySleep, Sleep: time.Minute},
	}}, pluginConfig{})
	mustLoad(t, h, conformance.PluginSpec{Name: "other", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
	hung := make(chan pipeline.Result, 1)
	go func() { hung <- call(ctx, h, "hang", `{}`) }()
	// Let the call reach the process.
	time.Sleep(200 * time.Millisecond)
	unloaded := make(chan error, 1)
	go func() { unloaded <- h.m.Unload(ctx, "leaving") }()
	eventually(t, "hang to leave the registry", 10*time.Second, func() bool {
		_, ok := h.tools.Lookup("hang")
		return !ok
	})
	old := pidOf(t, h.m, "other")
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitActive(h.m, h.k, "other", old, 20*time.Second); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-unloaded:
		t.Fatalf("the unload ended (%v) before the crashed plugin was back: the test shows nothing", err)
	default:
	}
	wantOK(t, call(ctx, h, "add", `{"a":2,"b":3}`), "5")
	if err := <-unloaded; err != nil {
		t.Fatal(err)
	}
	wantCode(t, <-hung, pipeline.CodeToolError)
}
