package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/plugins/mcp/launcher"
)

// The end-to-end tests build the real binaries (the host, this plugin, the
// sample safety and audit plugins, the test MCP server) once, write
// deployment files and use the host as a user would: `host run` with
// `host call` and `host tools`, and `host mcp` with the Go SDK's client.
// The npm servers come from testdata/servers, installed there by `npm ci`
// (.ci/run does it; the tests skip without them, except in CI).

// bins are the host, this plugin, the sample safety, audit and files
// plugins and the test MCP servers, built on first use.
var bins = &testkit.Binaries{Prefix: "plugkit-mcp-e2e-", Targets: map[string]string{
	"host":            "../../cmd/host",
	"plugins/mcp":     ".",
	"plugins/safety":  "../safety",
	"plugins/audit":   "../audit",
	"plugins/files":   "../files",
	"mcp-test-server": "../../internal/testkit/mcptestserver/serve",
	"hostile-mcp":     "../../internal/testkit/hostilemcp",
}}

func TestMain(m *testing.M) {
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

// needBinaries builds the binaries on first use and checks the platform.
func needBinaries(t testing.TB) {
	t.Helper()
	if runtime.GOOS != "linux" {
		t.Skip("the bridge is tested end to end on Linux")
	}
	bins.Need(t)
}

func bin(name string) string { return bins.Path(name) }

// npmServer is the path of an installed npm server's binary, e.g.
// "mcp-server-everything".
func npmServer(t testing.TB, name string) string {
	t.Helper()
	testenv.LookPath(t, "node")
	p, err := filepath.Abs(filepath.Join("testdata", "servers", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(p); err != nil {
		testenv.Missing(t, "%s (run `npm ci` in plugins/mcp/testdata/servers): %v", name, err)
	}
	return p
}

// noLeaks makes the test fail if it leaves a goroutine behind.
func noLeaks(t *testing.T) {
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
}

// deployment writes a deployment file in dir: the host block, the blocks
// given, and an audit plugin writing run/audit.log.
func deployment(t *testing.T, dir, blocks string) string {
	t.Helper()
	hcl := fmt.Sprintf(`
host {
  admin_socket     = "run/host.sock"
  approval_timeout = "5s"
  policy {
    timeout = true
  }
}
%s
plugin "audit" {
  path = %q
  config {
    path = "run/audit.log"
  }
}
`, blocks, bin("plugins/audit"))
	path := filepath.Join(dir, "deployment.hcl")
	if err := os.WriteFile(path, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// safetyBlock is the sample safety plugin with extra rules.
func safetyBlock(rules string) string {
	return fmt.Sprintf(`
plugin "safety" {
  path     = %q
  critical = true
  config {
%s
    ask_destructive = true
  }
}
`, bin("plugins/safety"), rules)
}

// cli runs the host binary and returns its stdout, stderr and exit code.
func cli(t testing.TB, args ...string) (string, string, int) {
	t.Helper()
	return testkit.Command(t, 90*time.Second, "", bin("host"), args...)
}

// hostRun is a `host run` in the background.
type hostRun struct {
	cmd    *exec.Cmd
	log    *testkit.Buffer
	config string
	done   chan struct{}
}

type pluginStatus struct {
	Name      string   `json:"name"`
	State     string   `json:"state"`
	PID       int      `json:"pid"`
	Tools     []string `json:"tools"`
	Held      []string `json:"held"`
	LastError string   `json:"last_error"`
	// Registered counts the tools the plugin registered since it was
	// loaded, each registration once.
	Registered int64 `json:"registered"`
}

// startHost starts `host run -c config` and waits until its n plugins are
// ACTIVE.
func startHost(t testing.TB, config string, n int) *hostRun {
	t.Helper()
	h := startHostAnyState(t, config)
	h.waitActive(t, n)
	return h
}

// execHost is the host binary with args.
func execHost(args ...string) *exec.Cmd { return exec.Command(bin("host"), args...) }

// startHostAnyState starts `host run -c config` and waits until its admin
// socket answers, whatever state its plugins are in.
func startHostAnyState(t testing.TB, config string) *hostRun {
	t.Helper()
	h := &hostRun{cmd: exec.Command(bin("host"), "run", "-c", config), log: &testkit.Buffer{}, config: config, done: make(chan struct{})}
	h.cmd.Stdout, h.cmd.Stderr = h.log, h.log
	// The host's private socket folder goes in the test's temporary folder,
	// so that it is removed even after the host was SIGKILLed.
	h.cmd.Env = append(os.Environ(), "TMPDIR="+t.TempDir())
	if err := h.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { _ = h.cmd.Wait(); close(h.done) }()
	t.Cleanup(func() {
		select {
		case <-h.done:
			return
		default:
		}
		_ = h.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-h.done:
		case <-time.After(20 * time.Second):
			_ = h.cmd.Process.Kill()
			<-h.done
		}
	})
	waitFor(t, 90*time.Second, "the admin socket", func() bool {
		select {
		case <-h.done:
			t.Fatalf("host run exited early\n%s", h.log)
		default:
		}
		return len(h.status(t)) > 0
	}, h.log.String)
	return h
}

// status is `host status --json`.
func (h *hostRun) status(t testing.TB) []pluginStatus {
	t.Helper()
	out, stderr, code := cli(t, "status", "--json", "-c", h.config)
	if code != 0 {
		return nil
	}
	var st struct{ Plugins []pluginStatus }
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatalf("status: %v\n%s%s", err, out, stderr)
	}
	return st.Plugins
}

func (h *hostRun) plugin(t testing.TB, name string) pluginStatus {
	t.Helper()
	for _, p := range h.status(t) {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no plugin %s in status", name)
	return pluginStatus{}
}

func (h *hostRun) waitActive(t testing.TB, n int) {
	t.Helper()
	h.waitActiveWithin(t, n, 90*time.Second)
}

// waitActiveWithin is waitActive with its own bound.
func (h *hostRun) waitActiveWithin(t testing.TB, n int, d time.Duration) {
	t.Helper()
	waitFor(t, d, "every plugin ACTIVE", func() bool {
		select {
		case <-h.done:
			t.Fatalf("host run exited early\n%s", h.log)
		default:
		}
		st := h.status(t)
		if len(st) != n {
			return false
		}
		for _, p := range st {
			if p.State != "ACTIVE" {
				return false
			}
		}
		return true
	}, h.log.String)
}

// waitFor polls cond until it holds or the deadline passes.
func waitFor(t testing.TB, d time.Duration, what string, cond func() bool, context ...func() string) {
	t.Helper()
	if !testkit.Eventually(d, cond) {
		extra := ""
		for _, c := range context {
			extra += "\n" + c()
		}
		t.Fatalf("timed out waiting for %s%s", what, extra)
	}
}

// callResult is `host call --json`'s output.
type callResult struct {
	ID    string          `json:"id"`
	OK    bool            `json:"ok"`
	Value json.RawMessage `json:"value"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	DecidedBy string `json:"decided_by"`
}

// String shows the error's code and message, which %+v hides behind a pointer.
func (r callResult) String() string {
	if r.Error == nil {
		return fmt.Sprintf("{id %s ok %v value %s decided_by %q}", r.ID, r.OK, r.Value, r.DecidedBy)
	}
	return fmt.Sprintf("{id %s ok %v error %s: %s decided_by %q}", r.ID, r.OK, r.Error.Code, r.Error.Message, r.DecidedBy)
}

func (r callResult) code() string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Code
}

func (r callResult) message() string {
	if r.Error == nil {
		return ""
	}
	return r.Error.Message
}

// call runs `host call --json` and counts it.
func (h *hostRun) call(t testing.TB, tool, args string) callResult {
	t.Helper()
	out, stderr, _ := cli(t, "call", "--json", "-c", h.config, tool, args)
	var r callResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("host call %s %s: not JSON: %q\nstderr: %s", tool, args, out, stderr)
	}
	return r
}

// text is the text of a bridged value's text blocks.
func text(t testing.TB, value json.RawMessage) string {
	t.Helper()
	var v struct {
		Content []struct{ Type, Text string }
	}
	if err := json.Unmarshal(value, &v); err != nil {
		t.Fatalf("value %s: %v", value, err)
	}
	var parts []string
	for _, c := range v.Content {
		parts = append(parts, c.Text)
	}
	return strings.Join(parts, "\n")
}

// auditLine is what the tests read of an audit line.
type auditLine struct {
	ID   string `json:"id"`
	Tool string `json:"tool"`
	OK   bool   `json:"ok"`
	Code string `json:"code"`
}

// audit reads dir's run/audit.log.
func audit(t testing.TB, dir string) []auditLine {
	t.Helper()
	f, err := os.Open(filepath.Join(dir, "run", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []auditLine
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var l auditLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("audit line %q: %v", sc.Text(), err)
		}
		lines = append(lines, l)
	}
	return lines
}

// waitAudit waits until the audit log has n lines (observers are fed
// without holding up the caller), then checks it has exactly the ids
// given, one line each.
func waitAudit(t testing.TB, dir string, ids []string) {
	t.Helper()
	waitFor(t, 30*time.Second, fmt.Sprintf("%d audit lines", len(ids)), func() bool { return len(audit(t, dir)) >= len(ids) })
	lines := audit(t, dir)
	seen := map[string]int{}
	for _, l := range lines {
		seen[l.ID]++
	}
	for _, id := range ids {
		if seen[id] != 1 {
			t.Errorf("call %s has %d audit lines, want 1", id, seen[id])
		}
	}
	if len(lines) != len(ids) {
		t.Errorf("%d audit lines for %d calls", len(lines), len(ids))
	}
}

// descendants are the pids below pid, from /proc.
func descendants(pid int) []int {
	children := map[int][]int{}
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if pp, ok := parentOf(p); ok {
			children[pp] = append(children[pp], p)
		}
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// parentOf reads a process's parent pid from /proc/PID/stat.
func parentOf(pid int) (int, bool) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// The command name is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 2 {
		return 0, false
	}
	pp, err := strconv.Atoi(f[1])
	return pp, err == nil
}

// alive reports whether pid is a process that has not exited (a zombie has).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && len(b) > i+2 && b[i+2] != 'Z'
}

// syscallKill sends SIGKILL to pid.
func syscallKill(pid int) error { return syscall.Kill(pid, syscall.SIGKILL) }

// serverProcesses are the processes below a bridge's pid but its launcher.
func serverProcesses(plugin int) []int {
	var out []int
	for _, pid := range descendants(plugin) {
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid)); err == nil && !strings.Contains(string(b), launcher.Arg) {
			out = append(out, pid)
		}
	}
	return out
}
