package e2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// The fault tests run the real `host run` with the shipped plugins under
// concurrent load from real admin-socket clients, kill -9 one plugin process
// while the load runs, and check what every caller got back.
//
// Only liveness is bounded in time, and generously: a call must answer
// within callDeadline, a killed plugin must be back within its backoff plus
// startAllowance. Nothing here measures speed.

const (
	loadCallers  = 32
	loadFor      = 3 * time.Second        // the least a load runs
	loadSettle   = time.Second            // load before the kill, and after the plugin is back
	callDeadline = 10 * time.Second       // a call still running then is a hang
	faultBackoff = 250 * time.Millisecond // the restart backoff the tests deploy
	// startAllowance is how long a restarted plugin may take to start,
	// beyond its backoff: generous, since test machines are shared.
	startAllowance = 5 * time.Second
	// giveUpAfter ends the wait for a plugin that is not coming back, so
	// that the test reports it instead of timing out.
	giveUpAfter = 30 * time.Second
)

// checkCall makes the checks every load test makes of a call: an answer in
// time, with an id; an ok result only for an allowed call and with what the
// tool returns; a contract code otherwise. It returns the outcome to count
// the call under and what is wrong ("" when nothing is); judged is false for
// a result with a contract code, which each test judges its own way.
func checkCall(c loadCall) (outcome, problem string, judged bool) {
	switch {
	case c.err != nil:
		if errors.Is(c.err, context.DeadlineExceeded) {
			return "no result", fmt.Sprintf("hung: no result within %s", callDeadline), true
		}
		return "no result", "no result (client error)", true
	case c.res.ID == "":
		return "no id", "result without an id", true
	case c.res.OK && c.res.Error != nil:
		return "ok", "OK with an error", true
	case c.res.OK && c.kind.deny:
		return "ok", "ALLOWED a call safety denies", true
	case c.res.OK && !strings.Contains(string(c.res.Value), c.kind.want):
		return "ok", "OK value without what the tool returns", true
	case c.res.OK:
		return "ok", "", true
	case c.res.Error == nil:
		return "not ok", "not OK without an error", true
	case !slices.Contains(contractCodes, c.res.Error.Code):
		return c.res.Error.Code, fmt.Sprintf("code %q is not a contract code", c.res.Error.Code), true
	}
	return c.res.Error.Code, "", false
}

// contractCodes are the seven codes of pipeline/result.go: every failed
// call carries one of them.
var contractCodes = []string{"UNKNOWN_TOOL", "INVALID_ARGUMENTS", "DENIED", "BLOCKED", "TOOL_ERROR", "TOOL_TIMEOUT", "ABORTED"}

// faultTweaks is the sample deployment with a fast restart policy on every
// plugin and a second safety rule, over the search query too; critical lists
// the plugins marked critical besides safety.
func faultTweaks(critical ...string) deploymentTweaks {
	restart := fmt.Sprintf(`  restart {
    attempts    = 5
    window      = "1m"
    backoff     = %q
    max_backoff = "2s"
  }
`, faultBackoff.String())
	return deploymentTweaks{
		plugin: func(name string) string {
			if slices.Contains(critical, name) {
				return "  critical = true\n" + restart
			}
			return restart
		},
		safetyRules: `    deny "no-secrets" {
      pattern   = ["(?i)password", "(?i)secret"]
      arguments = ["path", "q"]
      reason    = "secrets are off limits"
    }
`,
	}
}

// callKind is one kind of call the load makes.
type callKind struct {
	name  string
	tool  string
	args  string
	owner string // the plugin whose tool it is
	// deny says safety denies it: it must never come back OK.
	deny bool
	// rule, for a denied call, is the safety rule that denies it.
	rule string
	// want, for an allowed call, is what its OK value contains.
	want string
}

// loadMix is what each caller cycles through: allowed calls to two plugins
// and calls that three different safety checks deny.
var loadMix = []callKind{
	{name: "search", tool: "search", args: `{"q":"monotonic guard","limit":3}`, owner: "search", want: `"hits"`},
	{name: "read notes.md", tool: "read_file", args: `{"path":"notes.md"}`, owner: "files", want: "first notes"},
	{name: "read /etc/passwd", tool: "read_file", args: `{"path":"/etc/passwd"}`, owner: "files", deny: true, rule: "outside-root"},
	{name: "search", tool: "search", args: `{"q":"plugin restart","limit":3}`, owner: "search", want: `"hits"`},
	{name: "read todo.md", tool: "read_file", args: `{"path":"todo.md"}`, owner: "files", want: "write the tests"},
	{name: "read ../outside.txt", tool: "read_file", args: `{"path":"../outside.txt"}`, owner: "files", deny: true, rule: "outside-root"},
	{name: "search password", tool: "search", args: `{"q":"password reset"}`, owner: "search", deny: true, rule: "no-secrets"},
}

// loadCall is one call the load made and what came back.
type loadCall struct {
	kind       *callKind
	start, end time.Time
	res        admin.Result
	err        error // the client's error: no result at all
}

func (c loadCall) String() string {
	if c.err != nil {
		return fmt.Sprintf("%s %s: error after %s: %v", c.kind.tool, c.kind.args, c.end.Sub(c.start).Round(time.Millisecond), c.err)
	}
	r := c.res
	if r.OK {
		return fmt.Sprintf("%s %s: id %s ok %s", c.kind.tool, c.kind.args, r.ID, brief(string(r.Value)))
	}
	code, msg := "<no error>", ""
	if r.Error != nil {
		code, msg = r.Error.Code, r.Error.Message
	}
	return fmt.Sprintf("%s %s: id %s %s %q decided by %q", c.kind.tool, c.kind.args, r.ID, code, msg, r.DecidedBy)
}

func brief(s string) string {
	if len(s) > 80 {
		return s[:80] + "…"
	}
	return s
}

// load is loadCallers goroutines, each with its own admin client (its own
// connection), calling loadMix in turn until stopped.
type load struct {
	stopOnce sync.Once
	stop     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	calls    []loadCall
}

func startLoad(t *testing.T, socket string) *load {
	t.Helper()
	l := &load{stop: make(chan struct{})}
	for c := range loadCallers {
		l.wg.Add(1)
		go l.caller(socket, c)
	}
	// Stop the callers before the host goes, even when the test fails.
	t.Cleanup(func() { l.finish() })
	return l
}

func (l *load) caller(socket string, c int) {
	defer l.wg.Done()
	client := admin.NewClient(socket)
	var mine []loadCall
	defer func() {
		l.mu.Lock()
		l.calls = append(l.calls, mine...)
		l.mu.Unlock()
	}()
	for i := c; ; i++ {
		select {
		case <-l.stop:
			return
		default:
		}
		k := &loadMix[i%len(loadMix)]
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		start := time.Now()
		r, err := client.Call(ctx, k.tool, json.RawMessage(k.args), nil)
		end := time.Now()
		cancel()
		mine = append(mine, loadCall{kind: k, start: start, end: end, res: r, err: err})
	}
}

// finish stops the callers, waits for their last calls (each bounded by
// callDeadline) and returns every call made, in start order.
func (l *load) finish() []loadCall {
	l.stopOnce.Do(func() { close(l.stop) })
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	sort.Slice(l.calls, func(i, j int) bool { return l.calls[i].start.Before(l.calls[j].start) })
	return slices.Clone(l.calls)
}

// faultHost is a running `host run` of a fault deployment.
type faultHost struct {
	dir, config, socket string
	run                 *running
	client              *admin.Client
	pids                map[int]string // every plugin process seen, and whose
}

func startFaultHost(t *testing.T, tw deploymentTweaks) *faultHost {
	t.Helper()
	dir := t.TempDir()
	return startFaultHostWith(t, dir, deploymentFileWith(t, dir, tw))
}

// startFaultHostWith starts `host run` of config, a deployment file written
// into dir by deploymentFileWith (and perhaps edited since).
func startFaultHostWith(t *testing.T, dir, config string) *faultHost {
	t.Helper()
	h := &faultHost{dir: dir, config: config, socket: filepath.Join(dir, "run", "host.sock"), pids: map[int]string{}}
	h.run = startHost(t, config, len(shippedPlugins))
	h.client = admin.NewClient(h.socket)
	h.notePIDs(t, h.status(t))
	return h
}

// status is the host's status by plugin name; errors are retried, since a
// host under load and restarting a plugin may answer slowly.
func (h *faultHost) status(t *testing.T) map[string]admin.PluginStatus {
	t.Helper()
	var last error
	for range 10 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		st, err := h.client.Status(ctx)
		cancel()
		if err == nil {
			m := map[string]admin.PluginStatus{}
			for _, p := range st.Plugins {
				m[p.Name] = p
			}
			return m
		}
		last = err
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("status: %v\n%s", last, tail(h.run.stderr.String()))
	return nil
}

func (h *faultHost) notePIDs(t *testing.T, st map[string]admin.PluginStatus) {
	t.Helper()
	for name, p := range st {
		if p.PID > 0 {
			h.pids[p.PID] = name
		}
	}
}

// stop stops the host through the admin socket and waits for it to exit;
// then no plugin process it ever ran may be left.
func (h *faultHost) stop(t *testing.T) {
	t.Helper()
	select {
	case <-h.run.done: // stopped already (`host stop`)
	default:
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, err := h.client.Stop(ctx)
		cancel()
		if err != nil {
			// Unless `host stop` stopped it, and it is just being reaped.
			select {
			case <-h.run.done:
			case <-time.After(5 * time.Second):
				t.Fatalf("stop: %v", err)
			}
		}
	}
	select {
	case <-h.run.done:
		if h.run.err != nil {
			t.Errorf("host run: %v\n%s", h.run.err, tail(h.run.stderr.String()))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("host run did not stop\n%s", tail(h.run.stderr.String()))
	}
	deadline := time.Now().Add(10 * time.Second)
	for pid, name := range h.pids {
		if !testkit.Eventually(time.Until(deadline), func() bool { return processGone(pid) }) {
			t.Errorf("plugin %s process %d outlived the host", name, pid)
		}
	}
}

// processGone says whether pid no longer runs (a zombie does not run).
func processGone(pid int) bool {
	if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
		return true
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return true
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i >= 0 && i+2 < len(s) && s[i+2] == 'Z'
}

// tail is the end of a log, for failure messages.
func tail(s string) string {
	const n = 6000
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}

// fault is one kill under load and what was seen.
type fault struct {
	plugin   string
	critical bool
	oldPID   int
	newPID   int
	killAt   time.Time
	backAt   time.Time // the plugin ACTIVE again, in a new process
	allAt    time.Time // every plugin ACTIVE again
	// restarted are the plugins in a new process once every plugin was
	// ACTIVE again: the killed one and those that inject its services.
	restarted []string
	calls     []loadCall
}

// killUnderLoad starts the load, kills plugin's process with SIGKILL once
// the load runs, waits for the plugin to come back and lets the load run on
// for a while; it returns every call made.
func killUnderLoad(t *testing.T, h *faultHost, plugin string) *fault {
	t.Helper()
	all := h.status(t)
	before := all[plugin]
	if before.State != "ACTIVE" || before.PID <= 0 {
		t.Fatalf("%s before the kill: %+v", plugin, before)
	}
	f := &fault{plugin: plugin, critical: before.Critical, oldPID: before.PID}
	l := startLoad(t, h.socket)
	began := time.Now()
	time.Sleep(loadSettle)

	f.killAt = time.Now()
	if err := syscall.Kill(f.oldPID, syscall.SIGKILL); err != nil {
		t.Fatalf("kill -9 %s (pid %d): %v", plugin, f.oldPID, err)
	}
	for {
		st := h.status(t)
		h.notePIDs(t, st)
		now := time.Now()
		p := st[plugin]
		if f.backAt.IsZero() && p.State == "ACTIVE" && p.PID > 0 && p.PID != f.oldPID {
			f.backAt, f.newPID = now, p.PID
		}
		if !f.backAt.IsZero() && allActiveMap(st) {
			f.allAt = now
			for name, p := range st {
				if p.PID != all[name].PID {
					f.restarted = append(f.restarted, name)
				}
			}
			sort.Strings(f.restarted)
			break
		}
		if now.Sub(f.killAt) > giveUpAfter {
			l.finish()
			t.Fatalf("%s not back %s after kill -9: %+v\n%s", plugin, giveUpAfter, st, tail(h.run.stderr.String()))
		}
		time.Sleep(20 * time.Millisecond)
	}
	if rest := max(time.Until(began.Add(loadFor)), time.Until(f.allAt.Add(loadSettle))); rest > 0 {
		time.Sleep(rest)
	}
	f.calls = l.finish()
	return f
}

func allActiveMap(st map[string]admin.PluginStatus) bool {
	for _, p := range st {
		if p.State != "ACTIVE" {
			return false
		}
	}
	return len(st) == len(shippedPlugins)
}

// phase places a call against the outage, which lasts from the kill until
// every plugin is ACTIVE again: ended before the kill; started before it and
// ended after it; started during the outage; started after it.
func (f *fault) phase(c loadCall) string {
	switch {
	case c.end.Before(f.killAt):
		return "before"
	case c.start.Before(f.killAt):
		return "at kill"
	case c.start.Before(f.allAt):
		return "outage"
	default:
		return "after"
	}
}

var phases = []string{"before", "at kill", "outage", "after"}

// checkRestart asserts the plugin came back within its backoff plus
// startAllowance, and logs how long it took.
func (f *fault) checkRestart(t *testing.T) {
	t.Helper()
	back := f.backAt.Sub(f.killAt)
	t.Logf("%s: kill -9 pid %d; ACTIVE again as pid %d after %s (every plugin ACTIVE after %s; restarted: %s)",
		f.plugin, f.oldPID, f.newPID, back.Round(time.Millisecond), f.allAt.Sub(f.killAt).Round(time.Millisecond), strings.Join(f.restarted, ", "))
	if bound := faultBackoff + startAllowance; back > bound {
		t.Errorf("%s took %s to come back, more than its backoff %s plus %s to start", f.plugin, back, faultBackoff, startAllowance)
	}
}

// checkCalls asserts the contract over every call of the load: each got a
// result (none hung, none lost its connection), each result is OK or
// carries a contract code, no call safety denies came back OK, and a
// DENIED allowed call was denied by the hold of a critical plugin that was
// killed.
func (f *fault) checkCalls(t *testing.T) {
	t.Helper()
	if len(f.calls) == 0 {
		t.Fatal("the load made no calls")
	}
	type key struct{ phase, kind, outcome string }
	counts := map[key]int{}
	problems := map[string][]loadCall{}
	problem := func(what string, c loadCall) { problems[what] = append(problems[what], c) }
	holdDenied := 0
	for _, c := range f.calls {
		k := c.kind
		outcome, what, judged := checkCall(c)
		if what != "" {
			problem(what, c)
		}
		if !judged {
			code := c.res.Error.Code
			outcome = code
			held := code == "DENIED" && f.critical && c.res.DecidedBy == f.plugin &&
				strings.Contains(c.res.Error.Message, f.plugin)
			if held {
				holdDenied++
			}
			switch {
			case k.deny && code == "DENIED" && (c.res.DecidedBy == "safety" || held):
			case k.deny && slices.Contains(f.restarted, k.owner) && (code == "UNKNOWN_TOOL" || code == "TOOL_ERROR"):
				// Its tool was gone with the killed process (or with the
				// process of a plugin that injects the killed one's
				// service): the call never reached the guards.
			case k.deny:
				problem("a call safety denies came back "+code+", not DENIED", c)
			case code == "DENIED" && !held:
				problem("an allowed call DENIED, not by a killed critical plugin", c)
			}
		}
		counts[key{f.phase(c), k.name, outcome}]++
	}

	var sb strings.Builder
	for _, ph := range phases {
		var parts []string
		for k, n := range counts {
			if k.phase == ph {
				parts = append(parts, fmt.Sprintf("%s→%s:%d", k.kind, k.outcome, n))
			}
		}
		sort.Strings(parts)
		fmt.Fprintf(&sb, "\n  %-7s %s", ph, strings.Join(parts, " "))
	}
	t.Logf("%s: %d calls by %d callers over %s:%s", f.plugin, len(f.calls), loadCallers,
		f.calls[len(f.calls)-1].end.Sub(f.calls[0].start).Round(time.Millisecond), sb.String())

	for what, cs := range problems {
		var ex []string
		for _, c := range cs[:min(len(cs), 5)] {
			ex = append(ex, fmt.Sprintf("    [%s, started %s after the kill] %s", f.phase(c), c.start.Sub(f.killAt).Round(time.Millisecond), c))
		}
		t.Errorf("%s kill: %d calls %s, e.g.\n%s", f.plugin, len(cs), what, strings.Join(ex, "\n"))
	}
	if f.critical && holdDenied == 0 {
		t.Errorf("%s is critical, but no call was DENIED naming it during its outage", f.plugin)
	}
	if f.critical {
		t.Logf("%s: %d calls DENIED by its critical hold", f.plugin, holdDenied)
	}
}

// checkRecovered makes each kind of call once more, one at a time: allowed
// calls succeed and denied ones are DENIED by safety again. It returns the
// calls.
func (h *faultHost) checkRecovered(t *testing.T) []loadCall {
	t.Helper()
	var calls []loadCall
	for i := range loadMix {
		k := &loadMix[i]
		ctx, cancel := context.WithTimeout(context.Background(), callDeadline)
		start := time.Now()
		r, err := h.client.Call(ctx, k.tool, json.RawMessage(k.args), nil)
		c := loadCall{kind: k, start: start, end: time.Now(), res: r, err: err}
		cancel()
		calls = append(calls, c)
		switch {
		case err != nil:
			t.Errorf("after recovery: %s", c)
		case k.deny && (r.OK || r.Error == nil || r.Error.Code != "DENIED" || r.DecidedBy != "safety"):
			t.Errorf("after recovery, want DENIED by safety: %s", c)
		case !k.deny && (!r.OK || !strings.Contains(string(r.Value), k.want)):
			t.Errorf("after recovery, want OK with %s: %s", k.want, c)
		}
	}
	return calls
}

// TestFaultKillUnderLoad kills each shipped plugin in turn, each on its own
// host, under load.
func TestFaultKillUnderLoad(t *testing.T) {
	needShippedDeployment(t)
	for _, plugin := range shippedPlugins {
		t.Run(plugin, func(t *testing.T) {
			h := startFaultHost(t, faultTweaks())
			f := killUnderLoad(t, h, plugin)
			f.checkRestart(t)
			f.checkCalls(t)
			h.checkRecovered(t)
			h.stop(t)
		})
	}
}

// TestAuditCriticalExactlyOnceAcrossCrash kills a critical audit plugin
// under load: every call that returned a result, before, during and after
// the outage, has exactly one line in the audit log.
func TestAuditCriticalExactlyOnceAcrossCrash(t *testing.T) {
	needShippedDeployment(t)
	h := startFaultHost(t, faultTweaks("audit"))
	f := killUnderLoad(t, h, "audit")
	f.checkRestart(t)
	f.checkCalls(t)
	// The recovery calls count too: they are after the outage.
	calls := append(slices.Clone(f.calls), h.checkRecovered(t)...)
	h.stop(t)

	logPath := filepath.Join(h.dir, "run", "audit", "audit.log")
	lines := auditLines(t, logPath)
	if out, err := exec.Command(pluginPath("audit"), "verify", logPath).CombinedOutput(); err != nil {
		t.Errorf("audit verify after the crash: %v: %s", err, out)
	}

	// Every returned call, by phase: how many, lost (no line), doubled
	// (more than one line); and what the lost ones were.
	type tally struct{ returned, lost, doubled int }
	byPhase := map[string]*tally{}
	for _, ph := range phases {
		byPhase[ph] = &tally{}
	}
	lostBy := map[string]map[string]int{} // phase → outcome → lost calls
	var examples []string
	var lostStart, lostEnd [2]time.Duration // earliest and latest, after the kill
	anyLost := false
	returned := map[string]bool{}
	for _, c := range calls {
		if c.err != nil || c.res.ID == "" {
			continue // no result: checkCalls reports it
		}
		returned[c.res.ID] = true
		ph := f.phase(c)
		tl := byPhase[ph]
		tl.returned++
		switch n := lines[c.res.ID]; {
		case n == 0:
			tl.lost++
			outcome := "ok"
			if !c.res.OK && c.res.Error != nil {
				outcome = c.res.Error.Code + " by " + orDash(c.res.DecidedBy)
			}
			if lostBy[ph] == nil {
				lostBy[ph] = map[string]int{}
			}
			lostBy[ph][outcome]++
			st, en := c.start.Sub(f.killAt), c.end.Sub(f.killAt)
			if !anyLost {
				lostStart, lostEnd, anyLost = [2]time.Duration{st, st}, [2]time.Duration{en, en}, true
			}
			lostStart = [2]time.Duration{min(lostStart[0], st), max(lostStart[1], st)}
			lostEnd = [2]time.Duration{min(lostEnd[0], en), max(lostEnd[1], en)}
			if len(examples) < 8 {
				examples = append(examples, fmt.Sprintf("    lost [%s, started %s after the kill, ended %s after] %s",
					ph, c.start.Sub(f.killAt).Round(time.Millisecond), c.end.Sub(f.killAt).Round(time.Millisecond), c))
			}
		case n > 1:
			tl.doubled++
			if len(examples) < 8 {
				examples = append(examples, fmt.Sprintf("    %d lines [%s] %s", n, ph, c))
			}
		}
	}
	// Lines for calls that returned nothing to their caller.
	unknown := 0
	for id := range lines {
		if !returned[id] {
			unknown++
		}
	}
	var report strings.Builder
	total := tally{}
	for _, ph := range phases {
		tl := byPhase[ph]
		total.returned += tl.returned
		total.lost += tl.lost
		total.doubled += tl.doubled
		var lost []string
		for o, n := range lostBy[ph] {
			lost = append(lost, fmt.Sprintf("%s:%d", o, n))
		}
		sort.Strings(lost)
		fmt.Fprintf(&report, "\n  %-7s returned %5d, lost %4d, doubled %4d  lost by outcome: %s", ph, tl.returned, tl.lost, tl.doubled, orDash(strings.Join(lost, " ")))
	}
	if anyLost {
		ms := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
		fmt.Fprintf(&report, "\n  lost calls started from %s to %s after the kill and ended from %s to %s after it",
			ms(lostStart[0]), ms(lostStart[1]), ms(lostEnd[0]), ms(lostEnd[1]))
	}
	fmt.Fprintf(&report, "\n  total   returned %5d, lost %4d, doubled %4d; the log has %d lines, %d distinct ids, %d ids of no returned call",
		total.returned, total.lost, total.doubled, lineCount(lines), len(lines), unknown)
	t.Logf("audit log against the returned calls (outage: kill at 0, audit ACTIVE after %s):%s",
		f.backAt.Sub(f.killAt).Round(time.Millisecond), report.String())
	if total.lost > 0 || total.doubled > 0 {
		t.Errorf("audit critical: %d of %d returned calls have no line in the audit log, %d have more than one:%s\n%s",
			total.lost, total.returned, total.doubled, report.String(), strings.Join(examples, "\n"))
	}
	if unknown > 0 {
		t.Errorf("the audit log holds %d ids of calls that returned no result", unknown)
	}
}

// auditLines reads an audit log: how many lines name each call id.
func auditLines(t *testing.T, path string) map[string]int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var l struct {
			ID string `json:"id"`
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.ID == "" {
			t.Errorf("audit log line %d is not a line with an id (%v): %q", n, err, brief(sc.Text()))
			continue
		}
		ids[l.ID]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

func lineCount(ids map[string]int) int {
	n := 0
	for _, c := range ids {
		n += c
	}
	return n
}
