package remote_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// fewRestarts gives up after two restarts, quickly.
var fewRestarts = remote.RestartPolicy{Attempts: 2, Window: time.Minute, Backoff: 5 * time.Millisecond, MaxBackoff: 20 * time.Millisecond}

// TestCrashLoopStatus makes a plugin write a line to stderr and exit 3 soon
// after each apply: its restart budget runs out, and its status says
// FAILED, how the last process ended and what it wrote.
func TestCrashLoopStatus(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	const msg = "crashy: fatal: the database is gone"
	cfg, _ := json.Marshal(pluginConfig{Spec: conformance.PluginSpec{Name: "crashy"}, CrashAfterApply: msg})
	if err := h.m.Load(ctx, remote.Spec{Name: "crashy", Path: testPlugin, Config: cfg, Restart: fewRestarts}); err != nil {
		t.Fatalf("load: %v", err)
	}
	st := waitFailed(t, h.m, "crashy")
	if !strings.Contains(st.LastError, "restart budget exhausted: 3 crashes") {
		t.Errorf("LastError = %q, want the restart budget spent", st.LastError)
	}
	if !strings.Contains(st.LastError, "exited unexpectedly: exit status 3") {
		t.Errorf("LastError = %q, want it to give the exit status", st.LastError)
	}
	if !strings.HasPrefix(st.LastExit, "process ") || !strings.HasSuffix(st.LastExit, " exited unexpectedly: exit status 3") {
		t.Errorf("LastExit = %q, want the exit status 3", st.LastExit)
	}
	if n := len(st.Stderr); n == 0 || st.Stderr[n-1] != msg {
		t.Errorf("Stderr = %q, want it to end with %q", st.Stderr, msg)
	}
	if st.Restarts != 3 {
		t.Errorf("Restarts = %d, want 3", st.Restarts)
	}
	if st.PID != 0 {
		t.Errorf("a FAILED plugin has pid %d", st.PID)
	}
}

// TestCrashInApplyStatus makes a plugin write a line to stderr and exit 3
// in its apply step: it fails, and its status says how and what it wrote.
func TestCrashInApplyStatus(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	const msg = "crashy: fatal: bad configuration"
	cfg, _ := json.Marshal(pluginConfig{Spec: conformance.PluginSpec{Name: "crashy"}, CrashOnApply: msg})
	err := h.m.Load(ctx, remote.Spec{Name: "crashy", Path: testPlugin, Config: cfg, Restart: fewRestarts})
	t.Logf("load: %v", err)
	st := waitFailed(t, h.m, "crashy")
	if !strings.Contains(st.LastExit, "exit status 3") {
		t.Errorf("LastExit = %q, want the exit status 3", st.LastExit)
	}
	// The plugin may fail at once (its apply failed) or after its restarts
	// (the manager saw the crash first): either way the error says how.
	if !strings.Contains(st.LastError, "exit status 3") {
		t.Errorf("LastError = %q, want the exit status", st.LastError)
	}
	if n := len(st.Stderr); n == 0 || st.Stderr[n-1] != msg {
		t.Errorf("Stderr = %q, want it to end with %q", st.Stderr, msg)
	}
	if err == nil || !strings.Contains(err.Error(), "exit status 3") || !strings.Contains(err.Error(), msg) {
		t.Errorf("load = %v, want the exit status and the stderr line", err)
	}
}

// waitFailed waits for the plugin to be FAILED for good and returns its
// status. (A process that dies while its apply runs can make the plugin
// FAILED for a moment before the manager sees the crash and restarts it.)
func waitFailed(t *testing.T, m *remote.Manager, name string) remote.Status {
	t.Helper()
	var st remote.Status
	stableSince := time.Time{}
	eventually(t, name+" to fail", 30*time.Second, func() bool {
		st, _ = status(m, name)
		if st.State != kernel.Failed {
			stableSince = time.Time{}
			return false
		}
		if stableSince.IsZero() {
			stableSince = time.Now()
		}
		return time.Since(stableSince) > 300*time.Millisecond
	})
	st, _ = status(m, name)
	t.Logf("status: %s", describeStatus(st))
	return st
}

// TestKilledStatus SIGKILLs a plugin: once it is back, its status says the
// last process was killed by a signal, with what it had written to stderr.
func TestKilledStatus(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	mustLoad(t, h, conformance.PluginSpec{Name: "victim"}, pluginConfig{Control: "ctl"})
	if st, _ := status(h.m, "victim"); st.LastExit != "" || st.Stderr != nil {
		t.Fatalf("a plugin that never crashed has an exit: %s", describeStatus(st))
	}
	// The noise op writes a line to fd 1, which the SDK points at stderr.
	wantOK(t, ctl(ctx, h, "ctl", map[string]any{"op": "noise"}), `"ok"`)
	pid := pidOf(t, h.m, "victim")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := waitActive(h.m, h.k, "victim", pid, 20*time.Second); err != nil {
		t.Fatalf("victim: %v", err)
	}
	st, _ := status(h.m, "victim")
	t.Logf("status: %s", describeStatus(st))
	if want := "process " + strconv.Itoa(pid) + " exited unexpectedly: killed by signal: killed"; st.LastExit != want {
		t.Errorf("LastExit = %q, want %q", st.LastExit, want)
	}
	if !slices.Contains(st.Stderr, "noise from a tool call on fd 1") {
		t.Errorf("Stderr = %q, want the line the process wrote", st.Stderr)
	}
	if st.Restarts != 1 {
		t.Errorf("Restarts = %d, want 1", st.Restarts)
	}
}

// TestLaunchFailureStatus covers a process that dies before its handshake:
// the error of a Load says how it exited and what it wrote last, and
// restarts that keep failing so leave the plugin FAILED, once its restart
// budget is spent, with both in its status.
func TestLaunchFailureStatus(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})

	// The SDK refuses a bad message limit: it says so on stderr and exits 1.
	cfg, _ := json.Marshal(pluginConfig{Spec: conformance.PluginSpec{Name: "bad"}})
	err := h.m.Load(ctx, remote.Spec{Name: "bad", Path: testPlugin, Config: cfg, Env: []string{wire.EnvMaxMessageBytes + "=lots"}})
	if err == nil || !strings.Contains(err.Error(), "exit status 1") || !strings.Contains(err.Error(), "stderr: plugkit:") {
		t.Fatalf("load = %v, want the exit status and the SDK's message", err)
	}

	// A plugin whose binary is replaced by one that dies at once, then
	// crashes: its restart cannot start it.
	dir := t.TempDir()
	bin := filepath.Join(dir, "plugin")
	if err := os.Symlink(testPlugin, bin); err != nil {
		t.Fatal(err)
	}
	cfg, _ = json.Marshal(pluginConfig{Spec: conformance.PluginSpec{Name: "flaky"}})
	if err := h.m.Load(ctx, remote.Spec{Name: "flaky", Path: bin, Config: cfg, Restart: fewRestarts}); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(dir, "plugin.new")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'flaky: cannot open its data' >&2\nexit 4\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(script, bin); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pidOf(t, h.m, "flaky"), syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := waitFailed(t, h.m, "flaky")
	if !strings.Contains(st.LastExit, "exited while starting: exit status 4") {
		t.Errorf("LastExit = %q, want exit status 4", st.LastExit)
	}
	if !slices.Equal(st.Stderr, []string{"flaky: cannot open its data"}) {
		t.Errorf("Stderr = %q, want the script's line", st.Stderr)
	}
	if !strings.Contains(st.LastError, "exit status 4") || !strings.Contains(st.LastError, "flaky: cannot open its data") {
		t.Errorf("LastError = %q, want the exit status and the stderr line", st.LastError)
	}
}

// TestRestartRetriesFailedStart makes a crash restart fail to start the
// process (its binary cannot be executed, as a fork/exec fails when the
// host is out of file descriptors): the failed start counts as a crash and
// is tried again with backoff, so the plugin comes back by itself once the
// binary can run again instead of staying FAILED.
func TestRestartRetriesFailedStart(t *testing.T) {
	ctx := testkit.ContextFor(t, time.Minute)
	h := newHost(t, conformance.Config{}, remote.Options{})
	dir := t.TempDir()
	bin := filepath.Join(dir, "plugin")
	if err := os.Symlink(testPlugin, bin); err != nil {
		t.Fatal(err)
	}
	cfg, _ := json.Marshal(pluginConfig{Spec: conformance.PluginSpec{Name: "phoenix", Tools: []conformance.ToolSpec{echoTool("rise")}}})
	policy := remote.RestartPolicy{Attempts: 50, Window: time.Minute, Backoff: 5 * time.Millisecond, MaxBackoff: 50 * time.Millisecond}
	if err := h.m.Load(ctx, remote.Spec{Name: "phoenix", Path: bin, Config: cfg, Restart: policy}); err != nil {
		t.Fatal(err)
	}
	// A file that is not executable where the binary was.
	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, []byte("not a program"), 0o600); err != nil {
		t.Fatal(err)
	}
	pid := pidOf(t, h.m, "phoenix")
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var st remote.Status
	eventually(t, "three failed starts", 20*time.Second, func() bool {
		st, _ = status(h.m, "phoenix")
		return st.Restarts >= 4 // the crash, then failed starts: the second one's mark is set
	})
	t.Logf("while it cannot start: %s", describeStatus(st))
	if st.State == kernel.Failed {
		t.Fatalf("a failed start during a restart left the plugin FAILED: %s", describeStatus(st))
	}
	if !strings.HasPrefix(st.LastExit, "no process started: ") || !strings.Contains(st.LastExit, "permission denied") {
		t.Errorf("LastExit = %q, want the failed start", st.LastExit)
	}
	r := call(ctx, h, "rise", `{}`)
	wantCode(t, r, "TOOL_ERROR", "phoenix is restarting", "its last start failed")

	if err := os.Remove(bin); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(testPlugin, bin); err != nil {
		t.Fatal(err)
	}
	if err := waitActive(h.m, h.k, "phoenix", pid, 20*time.Second); err != nil {
		t.Fatalf("phoenix: %v", err)
	}
	wantOK(t, call(ctx, h, "rise", `{"x":1}`), `{"x":1}`)
}
