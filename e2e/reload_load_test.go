package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// The reload tests run the real `host run` with the shipped plugins under
// the load of load_test.go (loadCallers callers cycling through loadMix:
// allowed calls, and calls the safety rules deny) and reload while it runs:
// each plugin by name, the whole file with a changed config, and to
// binaries that cannot start. A reload fails no call: every allowed call is
// OK, every call safety denies is DENIED by its safety rule (never by a
// critical plugin's hold, never UNKNOWN_TOOL or TOOL_ERROR), and none hangs.
//
// As in load_test.go only liveness is bounded in time, and generously.

const (
	reloadsPerPlugin = 3
	reloadGap        = 400 * time.Millisecond // load between two reloads
	// reloadDeadline bounds one reload: a reload still running then hangs.
	reloadDeadline = 60 * time.Second
	// oldGoneWithin bounds how long a replaced process may live on after
	// its reload returned (it is drained and stopped within the reload).
	oldGoneWithin = 10 * time.Second
)

// reloadAlso lists, for a plugin, the plugins its reload starts again too:
// those that inject a service it provides.
var reloadAlso = map[string][]string{"index": {"search"}}

// reloadEvent is one reload made under the load and what it answered.
type reloadEvent struct {
	what       string // "host reload files", "admin Reload(files)", "SIGHUP"
	start, end time.Time
	out        string // stdout of the CLI, or the admin message
	errText    string // stderr of the CLI, or the admin error
	code       int    // the CLI's exit code; 0 or 1 for the admin client
}

func (e *reloadEvent) took() time.Duration { return e.end.Sub(e.start).Round(time.Millisecond) }

func (e *reloadEvent) String() string {
	if e.code == 0 {
		return fmt.Sprintf("%s: ok after %s: %s", e.what, e.took(), strings.TrimSpace(e.out))
	}
	return fmt.Sprintf("%s: exit %d after %s: %s%s", e.what, e.code, e.took(), e.out, strings.TrimSpace(e.errText))
}

// reloadRun is a load on a host and the reloads made while it runs.
type reloadRun struct {
	h      *faultHost
	l      *load
	began  time.Time
	events []*reloadEvent
}

// startReloadLoad starts the load and lets it run for loadSettle.
func startReloadLoad(t *testing.T, h *faultHost) *reloadRun {
	t.Helper()
	r := &reloadRun{h: h, l: startLoad(t, h.socket), began: time.Now()}
	time.Sleep(loadSettle)
	return r
}

// cli runs `host reload [NAME]` as a user would, with the deployment file.
func (r *reloadRun) cli(t *testing.T, name string) *reloadEvent {
	t.Helper()
	args := []string{"reload", "-c", r.h.config}
	what := "host reload"
	if name != "" {
		args = append(args, name)
		what += " " + name
	}
	e := &reloadEvent{what: what, start: time.Now()}
	e.out, e.errText, e.code = cli(t, args...)
	e.end = time.Now()
	r.events = append(r.events, e)
	return e
}

// admin reloads through the admin client ("" reloads the file).
func (r *reloadRun) admin(t *testing.T, name string) *reloadEvent {
	t.Helper()
	e := &reloadEvent{what: fmt.Sprintf("admin Reload(%q)", name), start: time.Now()}
	ctx, cancel := context.WithTimeout(context.Background(), reloadDeadline)
	msg, err := r.h.client.Reload(ctx, name)
	cancel()
	e.end, e.out = time.Now(), msg
	if err != nil {
		e.errText, e.code = err.Error(), 1
	}
	r.events = append(r.events, e)
	return e
}

// sighup sends SIGHUP to `host run`, which reloads the file, and waits
// until each plugin of restarted is ACTIVE in a new process: that is when
// the reload is seen to end.
func (r *reloadRun) sighup(t *testing.T, restarted ...string) *reloadEvent {
	t.Helper()
	before := r.h.status(t)
	e := &reloadEvent{what: "SIGHUP", start: time.Now()}
	r.events = append(r.events, e)
	if err := r.h.run.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatalf("SIGHUP: %v", err)
	}
	for {
		st := r.h.status(t)
		r.h.notePIDs(t, st)
		done := true
		for _, name := range restarted {
			p := st[name]
			done = done && p.State == "ACTIVE" && p.PID > 0 && p.PID != before[name].PID
		}
		if done {
			e.end = time.Now()
			e.out = "restarted " + strings.Join(restarted, ", ")
			return e
		}
		if time.Since(e.start) > reloadDeadline {
			e.end, e.code = time.Now(), -1
			t.Fatalf("SIGHUP: %s not restarted after %s: %+v\n%s", strings.Join(restarted, ", "), reloadDeadline, st, tail(r.h.run.stderr.String()))
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// finish lets the load run on until loadFor after it began and loadSettle
// after the last reload, stops it and returns every call it made.
func (r *reloadRun) finish() []loadCall {
	until := r.began.Add(loadFor)
	if n := len(r.events); n > 0 && r.events[n-1].end.Add(loadSettle).After(until) {
		until = r.events[n-1].end.Add(loadSettle)
	}
	time.Sleep(time.Until(until))
	return r.l.finish()
}

// logDurations logs how long each reload took.
func (r *reloadRun) logDurations(t *testing.T) {
	t.Helper()
	var parts []string
	for _, e := range r.events {
		parts = append(parts, fmt.Sprintf("%s %s", e.what, e.took()))
	}
	t.Logf("reload durations: %s", strings.Join(parts, "; "))
}

// expectOK fails the test when the reload failed.
func (e *reloadEvent) expectOK(t *testing.T, h *faultHost) {
	t.Helper()
	if e.code != 0 {
		t.Fatalf("%s\nhost log:\n%s", e, tail(h.run.stderr.String()))
	}
	if e.end.Sub(e.start) > reloadDeadline {
		t.Errorf("%s took %s, more than %s", e.what, e.took(), reloadDeadline)
	}
}

// expectRefused fails the test unless the reload failed with an error
// that holds each of want.
func (e *reloadEvent) expectRefused(t *testing.T, want ...string) {
	t.Helper()
	if e.code == 0 {
		t.Errorf("%s succeeded; want it to fail", e)
		return
	}
	for _, w := range want {
		if !strings.Contains(e.errText, w) {
			t.Errorf("%s: the error does not say %q", e, w)
		}
	}
	t.Logf("%s refused after %s, as it should be: %s", e.what, e.took(), strings.TrimSpace(e.errText))
}

// checkPIDs compares the status before and after a reload: each plugin of
// restarted is ACTIVE in a new process and its old process is gone; every
// other plugin is ACTIVE in the same process. It returns the changes, for
// the log.
func (h *faultHost) checkPIDs(t *testing.T, what string, before, after map[string]admin.PluginStatus, restarted ...string) string {
	t.Helper()
	h.notePIDs(t, after)
	var changes []string
	for _, name := range shippedPlugins {
		b, a := before[name], after[name]
		if a.State != "ACTIVE" || a.PID <= 0 {
			t.Errorf("after %s: %s is %s (pid %d); want ACTIVE", what, name, a.State, a.PID)
			continue
		}
		if !slices.Contains(restarted, name) {
			if a.PID != b.PID {
				t.Errorf("after %s: %s runs in process %d, not in its process %d from before", what, name, a.PID, b.PID)
			}
			continue
		}
		if a.PID == b.PID {
			t.Errorf("after %s: %s still runs in its old process %d", what, name, b.PID)
			continue
		}
		changes = append(changes, fmt.Sprintf("%s %d→%d", name, b.PID, a.PID))
		if !testkit.Eventually(oldGoneWithin, func() bool { return processGone(b.PID) }) {
			t.Errorf("after %s: the old process %d of %s still runs %s later", what, b.PID, name, oldGoneWithin)
		}
	}
	if len(changes) == 0 {
		return "no process changed"
	}
	return strings.Join(changes, ", ")
}

// overlaps is the first reload that ran while c did.
func overlaps(c loadCall, events []*reloadEvent) *reloadEvent {
	for _, e := range events {
		if c.start.Before(e.end) && c.end.After(e.start) {
			return e
		}
	}
	return nil
}

// when places a call against the reloads, for failure messages.
func when(c loadCall, events []*reloadEvent) string {
	if e := overlaps(c, events); e != nil {
		return fmt.Sprintf("during %s: started %s after it began, ended %s after", e.what,
			c.start.Sub(e.start).Round(time.Millisecond), c.end.Sub(e.start).Round(time.Millisecond))
	}
	var last *reloadEvent
	for _, e := range events {
		if !e.end.After(c.start) {
			last = e
		}
	}
	if last == nil {
		return "before any reload"
	}
	return fmt.Sprintf("started %s after %s ended", c.start.Sub(last.end).Round(time.Millisecond), last.what)
}

// checkNoFailures asserts that no call of the load failed: each got a
// result in time, each allowed call is OK with what its tool returns, and
// each call safety denies is DENIED by its safety rule.
func checkNoFailures(t *testing.T, calls []loadCall, events []*reloadEvent) {
	t.Helper()
	if len(calls) == 0 {
		t.Fatal("the load made no calls")
	}
	type key struct{ kind, outcome string }
	counts := map[key]int{}
	problems := map[string][]loadCall{}
	problem := func(what string, c loadCall) { problems[what] = append(problems[what], c) }
	var during int
	var lat, latDuring []time.Duration
	for _, c := range calls {
		k := c.kind
		d := c.end.Sub(c.start)
		lat = append(lat, d)
		if overlaps(c, events) != nil {
			during++
			latDuring = append(latDuring, d)
		}
		outcome, what, judged := checkCall(c)
		if what != "" {
			problem(what, c)
		}
		if !judged {
			code, msg := c.res.Error.Code, c.res.Error.Message
			switch {
			case !k.deny:
				problem("an allowed call failed with "+code, c)
			case code != "DENIED":
				problem("a call safety denies came back "+code+", not DENIED", c)
			case strings.Contains(msg, "critical plugin"):
				outcome = "DENIED by a hold"
				problem("a call safety denies was DENIED by a critical plugin's hold, not by its rule", c)
			case c.res.DecidedBy != "safety" || !strings.Contains(msg, fmt.Sprintf("denied by safety rule %q", k.rule)):
				outcome = "DENIED otherwise"
				problem(fmt.Sprintf("a call safety denies was DENIED, but not by safety rule %q", k.rule), c)
			}
		}
		counts[key{k.name, outcome}]++
	}
	var parts []string
	for k, n := range counts {
		parts = append(parts, fmt.Sprintf("%s→%s:%d", k.kind, k.outcome, n))
	}
	sort.Strings(parts)
	t.Logf("%d calls by %d callers over %s, %d of them while a reload ran: %s", len(calls), loadCallers,
		calls[len(calls)-1].end.Sub(calls[0].start).Round(time.Millisecond), during, strings.Join(parts, " "))
	t.Logf("call latency: all %s; while a reload ran %s", latencies(lat), latencies(latDuring))

	whats := make([]string, 0, len(problems))
	for what := range problems {
		whats = append(whats, what)
	}
	sort.Strings(whats)
	for _, what := range whats {
		cs := problems[what]
		var ex []string
		for _, c := range cs[:min(len(cs), 5)] {
			ex = append(ex, fmt.Sprintf("    [%s] %s", when(c, events), c))
		}
		t.Errorf("%d calls %s, e.g.\n%s", len(cs), what, strings.Join(ex, "\n"))
	}
}

// latencies summarises call durations: median, 99th percentile and max.
func latencies(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	ms := func(d time.Duration) time.Duration { return d.Round(100 * time.Microsecond) }
	return fmt.Sprintf("p50 %s p99 %s max %s", ms(s[len(s)/2]), ms(s[len(s)*99/100]), ms(s[len(s)-1]))
}

// TestReloadEachPluginUnderLoad reloads each shipped plugin by name, a few
// times, under load: the CLI for the first and third reload, the admin
// client for the second. Then `host stop`, and once it has returned every
// call of the loads has its line in the audit log, once: audit is critical,
// as in the sample deployment, whose promise that is.
//
// On a busy machine an audit log that fsyncs each line falls behind the
// load by seconds. Its results are then still queued when it is reloaded
// (they go to the new process) and when the host stops (they are written
// before audit's process ends, and `host stop` waits for that).
func TestReloadEachPluginUnderLoad(t *testing.T) {
	needShippedDeployment(t)
	h := startFaultHost(t, faultTweaks("audit"))
	var all []loadCall
	for _, plugin := range shippedPlugins {
		t.Run(plugin, func(t *testing.T) {
			r := startReloadLoad(t, h)
			defer func() { all = append(all, r.l.finish()...) }()
			restarted := append([]string{plugin}, reloadAlso[plugin]...)
			for i := range reloadsPerPlugin {
				if i > 0 {
					time.Sleep(reloadGap)
				}
				before := h.status(t)
				var e *reloadEvent
				if i%2 == 0 {
					e = r.cli(t, plugin)
				} else {
					e = r.admin(t, plugin)
				}
				if e.code != 0 {
					after := h.status(t)
					t.Errorf("reload %d of %s: %s\n(after it: %s)\nhost log:\n%s", i+1, plugin, e,
						h.checkPIDs(t, e.what, before, after), tail(r.h.run.stderr.String()))
					break
				}
				e.expectOK(t, h)
				t.Logf("reload %d of %s: %s took %s (%s)", i+1, plugin, e.what, e.took(), h.checkPIDs(t, e.what, before, h.status(t), restarted...))
			}
			r.logDurations(t)
			checkNoFailures(t, r.finish(), r.events)
			all = append(all, h.checkRecovered(t)...)
		})
	}
	// No wait here for the host to exit: `host stop` does, and the
	// log must be complete when it returns.
	if out, stderr, code := cli(t, "stop", "-c", h.config); code != 0 {
		t.Errorf("host stop: exit %d: %s%s", code, out, stderr)
	}
	checkAuditLines(t, filepath.Join(h.dir, "run", "audit", "audit.log"), all)
	h.stop(t)
}

// checkAuditLines asserts that the audit log verifies and holds one line
// for each call that returned a result, and none for anything else.
func checkAuditLines(t *testing.T, logPath string, calls []loadCall) {
	t.Helper()
	if out, err := exec.Command(pluginPath("audit"), "verify", logPath).CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v: %s", err, out)
	}
	lines := auditLines(t, logPath)
	returned := map[string]bool{}
	var lost, doubled []string
	for _, c := range calls {
		if c.err != nil || c.res.ID == "" {
			continue
		}
		returned[c.res.ID] = true
		switch n := lines[c.res.ID]; {
		case n == 0:
			lost = append(lost, c.String())
		case n > 1:
			doubled = append(doubled, fmt.Sprintf("%d lines: %s", n, c))
		}
	}
	unknown := 0
	for id := range lines {
		if !returned[id] {
			unknown++
		}
	}
	t.Logf("audit log: %d lines for %d returned calls; %d calls without a line, %d with more than one, %d lines of no returned call",
		lineCount(lines), len(returned), len(lost), len(doubled), unknown)
	if len(lost) > 0 {
		t.Errorf("%d of %d returned calls have no line in the audit log, e.g.\n    %s", len(lost), len(returned), strings.Join(lost[:min(len(lost), 5)], "\n    "))
	}
	if len(doubled) > 0 {
		t.Errorf("%d returned calls have more than one line in the audit log, e.g.\n    %s", len(doubled), strings.Join(doubled[:min(len(doubled), 5)], "\n    "))
	}
	if unknown > 0 {
		t.Errorf("the audit log holds %d ids of calls that returned no result", unknown)
	}
}

// TestReloadFileUnderLoad changes the deployment file under load (a new
// safety rule, a smaller read limit for files) and reloads it with `host
// reload`: files and safety start again, the others keep their process, and
// the new config applies. Then SIGHUP reloads the original file back.
func TestReloadFileUnderLoad(t *testing.T) {
	needShippedDeployment(t)
	h := startFaultHost(t, faultTweaks())
	big := strings.Repeat("a line of a larger file\n", 10) // 240 bytes
	if err := os.WriteFile(filepath.Join(h.dir, "workspace", "big.md"), []byte(big), 0o644); err != nil {
		t.Fatal(err)
	}
	original := readFile(t, h.config)
	changed := replaceOnce(t, original, `    root = "workspace"`, "    root      = \"workspace\"\n    max_bytes = 100")
	changed = replaceOnce(t, changed, "    ask_destructive = true", `    deny "no-drafts" {
      pattern   = ["(?i)draft"]
      arguments = ["path", "q"]
      reason    = "drafts stay private"
    }
    ask_destructive = true`)

	r := startReloadLoad(t, h)
	before := h.status(t)
	writeFileAtomic(t, h.config, changed)
	e := r.cli(t, "")
	e.expectOK(t, h)
	if !strings.Contains(e.out, "files, safety reloaded") || !strings.Contains(e.out, "3 unchanged") {
		t.Errorf("%s: want files and safety reloaded, 3 unchanged", e)
	}
	changedPIDs := h.status(t)
	t.Logf("%s took %s (%s)", e.what, e.took(), h.checkPIDs(t, e.what, before, changedPIDs, "files", "safety"))

	// The new config applies, while the load runs.
	for _, c := range []struct{ tool, args string }{
		{"read_file", `{"path":"drafts/plan.md"}`},
		{"search", `{"q":"draft roadmap"}`},
	} {
		res, _ := callJSON(t, h.config, c.tool, c.args)
		if res.OK || res.Error == nil || res.Error.Code != "DENIED" || res.DecidedBy != "safety" ||
			!strings.Contains(res.Error.Message, `denied by safety rule "no-drafts"`) {
			t.Errorf("after the reload, %s %s: %+v; want DENIED by safety rule no-drafts", c.tool, c.args, res)
		}
	}
	if res, _ := callJSON(t, h.config, "read_file", `{"path":"big.md"}`); res.OK || res.Error == nil || !strings.Contains(res.Error.Message, "100-byte limit") {
		t.Errorf("after the reload, read_file big.md: %+v %s; want the 100-byte limit of the new config", res, res.Value)
	}

	// SIGHUP reloads the original file: the new rule and the limit go.
	time.Sleep(reloadGap)
	writeFileAtomic(t, h.config, original)
	e = r.sighup(t, "files", "safety")
	t.Logf("%s: files and safety ACTIVE in new processes after %s (%s)", e.what, e.took(), h.checkPIDs(t, e.what, changedPIDs, h.status(t), "files", "safety"))
	if res, _ := callJSON(t, h.config, "search", `{"q":"draft roadmap"}`); !res.OK {
		t.Errorf("after SIGHUP, search draft roadmap: %+v; want OK, the rule gone", res)
	}
	if res, _ := callJSON(t, h.config, "read_file", `{"path":"big.md"}`); !res.OK || !strings.Contains(string(res.Value), "a larger file") {
		t.Errorf("after SIGHUP, read_file big.md: %+v %s; want OK, the limit gone", res, res.Value)
	}

	r.logDurations(t)
	checkNoFailures(t, r.finish(), r.events)
	h.checkRecovered(t)
	h.stop(t)
}

// crasherStderr is what the crashing binary writes before it exits.
const crasherStderr = "crasher: fatal: this version cannot start"

// buildCrasher builds a program that writes crasherStderr to stderr and
// exits with status 3 at once, as a plugin binary broken at start would.
func buildCrasher(t *testing.T, dir string) string {
	t.Helper()
	src := filepath.Join(dir, "crasher.go")
	prog := fmt.Sprintf("package main\n\nimport (\n\t\"fmt\"\n\t\"os\"\n)\n\nfunc main() {\n\tfmt.Fprintln(os.Stderr, %q)\n\tos.Exit(3)\n}\n", crasherStderr)
	if err := os.WriteFile(src, []byte(prog), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "crasher")
	cmd := exec.Command("go", "build", "-o", out, src)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build crasher: %v\n%s", err, b)
	}
	return out
}

// buildTestPlugin builds internal/testkit/testplugin (once): a plugin that
// starts and declares itself like any other, and whose config can make it
// crash when applied (crash_on_apply).
func buildTestPlugin(t *testing.T) string {
	t.Helper()
	return bins.Build(t, "testplugin", module+"internal/testkit/testplugin")
}

// testPluginStderr is what the test plugin writes before it exits when
// applied with crash_on_apply.
const testPluginStderr = "testplugin: fatal: the new safety cannot start"

// TestReloadToCrashingBinaryUnderLoad reloads, under load, to versions
// that cannot start: the reload reports an error naming the plugin, the
// version that runs keeps serving in its process, and no call fails. Then
// the file and the binary are restored, and reloads succeed again.
func TestReloadToCrashingBinaryUnderLoad(t *testing.T) {
	needShippedDeployment(t)
	helpers := t.TempDir()
	crasher := buildCrasher(t, helpers)
	testplugin := buildTestPlugin(t)

	// files runs from a copy, so that its binary can be replaced.
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	filesBin := filepath.Join(dir, "bin", "files")
	installBinary(t, pluginPath("files"), filesBin)
	config := deploymentFileWith(t, dir, faultTweaks())
	original := replaceOnce(t, readFile(t, config), strconv.Quote(pluginPath("files")), strconv.Quote(filesBin))
	writeFileAtomic(t, config, original)
	h := startFaultHostWith(t, dir, config)

	r := startReloadLoad(t, h)
	pids := h.status(t)

	// 1. files' path to a binary that exits at start: the file is refused
	// when its plugins are checked, and nothing changes.
	writeFileAtomic(t, config, replaceOnce(t, original, strconv.Quote(filesBin), strconv.Quote(crasher)))
	e := r.cli(t, "")
	e.expectRefused(t, `Plugin "files"`, crasherStderr, "nothing changed")
	h.checkPIDs(t, e.what, pids, h.status(t))

	// 2. safety, critical, to a plugin that passes the check and crashes
	// when applied: its reload fails and the running safety keeps serving
	// (and holds no call).
	time.Sleep(reloadGap)
	writeFileAtomic(t, config, replaceSafety(t, original, fmt.Sprintf(`plugin "safety" {
  path     = %q
  critical = true
  config {
    crash_on_apply = %q
  }
}
`, testplugin, testPluginStderr)))
	e = r.cli(t, "")
	e.expectRefused(t, "reload safety", "keeps serving", "safety kept the running version")
	if !strings.Contains(e.errText, testPluginStderr) {
		t.Errorf("the error does not quote what the crashed process wrote (%q): %s", testPluginStderr, e.errText)
	}
	h.checkPIDs(t, e.what, pids, h.status(t))

	// 3. The file restored: the reload succeeds and changes nothing (the
	// failed safety block was not kept).
	time.Sleep(reloadGap)
	writeFileAtomic(t, config, original)
	e = r.cli(t, "")
	e.expectOK(t, h)
	if !strings.Contains(e.out, "none reloaded") {
		t.Errorf("%s: want nothing reloaded", e)
	}
	h.checkPIDs(t, e.what, pids, h.status(t))

	// 4. files' binary replaced by one that exits at start, then `host
	// reload files`: the file is read again and refused when files is
	// checked, and the running files keeps serving.
	time.Sleep(reloadGap)
	installBinary(t, crasher, filesBin)
	e = r.cli(t, "files")
	e.expectRefused(t, `Plugin "files"`, crasherStderr, "nothing changed")
	h.checkPIDs(t, e.what, pids, h.status(t))

	// 5. The binary restored: files and safety reload.
	time.Sleep(reloadGap)
	installBinary(t, pluginPath("files"), filesBin)
	e = r.cli(t, "files")
	e.expectOK(t, h)
	now := h.status(t)
	t.Logf("%s took %s (%s)", e.what, e.took(), h.checkPIDs(t, e.what, pids, now, "files"))
	time.Sleep(reloadGap)
	e = r.admin(t, "safety")
	e.expectOK(t, h)
	t.Logf("%s took %s (%s)", e.what, e.took(), h.checkPIDs(t, e.what, now, h.status(t), "safety"))

	r.logDurations(t)
	checkNoFailures(t, r.finish(), r.events)
	h.checkRecovered(t)
	h.stop(t)
	checkNoProcessesOf(t, dir, helpers)
}

// replaceSafety replaces the safety block of a deployment file written by
// deploymentFileWith with block.
func replaceSafety(t *testing.T, hcl, block string) string {
	t.Helper()
	start := strings.Index(hcl, `plugin "safety" {`)
	end := strings.Index(hcl, `plugin "audit" {`)
	if start < 0 || end < start {
		t.Fatalf("no safety block followed by the audit block in:\n%s", hcl)
	}
	return hcl[:start] + block + "\n" + hcl[end:]
}

// installBinary copies src to dst through a rename, as an install would:
// a process running the old dst keeps its file.
func installBinary(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	tmp := dst + ".new"
	if err := os.WriteFile(tmp, b, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// writeFileAtomic writes path through a rename, so that the host never
// reads half a file.
func writeFileAtomic(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// replaceOnce replaces old, which must occur exactly once in s, with new.
func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if n := strings.Count(s, old); n != 1 {
		t.Fatalf("%q occurs %d times in:\n%s", old, n, s)
	}
	return strings.Replace(s, old, new, 1)
}

// checkNoProcessesOf fails the test when a process still runs a binary
// from one of dirs, after a grace period.
func checkNoProcessesOf(t *testing.T, dirs ...string) {
	t.Helper()
	var left []string
	if !testkit.Eventually(10*time.Second, func() bool {
		left = processesOf(dirs)
		return len(left) == 0
	}) {
		t.Errorf("processes left running: %s", strings.Join(left, ", "))
	}
}

func processesOf(dirs []string) []string {
	entries, _ := os.ReadDir("/proc")
	var out []string
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		exe, err := os.Readlink(filepath.Join("/proc", e.Name(), "exe"))
		if err != nil || processGone(pid) {
			continue
		}
		exe = strings.TrimSuffix(exe, " (deleted)")
		for _, d := range dirs {
			if strings.HasPrefix(exe, d+string(filepath.Separator)) {
				out = append(out, fmt.Sprintf("%d (%s)", pid, exe))
			}
		}
	}
	return out
}
