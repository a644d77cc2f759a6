package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/sandbox"
)

// needCgroups skips a test where the host cannot give a plugin a cgroup
// of its own (not root, no delegated cgroup v2 subtree); as root, which CI
// is, a machine without them fails it.
func needCgroups(t *testing.T) {
	t.Helper()
	needShippedDeployment(t)
	s := sandbox.Detect(bins.Path("host"))
	if slices.Contains(s.CgroupControllers, sandbox.ControllerMemory) && slices.Contains(s.CgroupControllers, sandbox.ControllerPids) {
		return
	}
	if os.Geteuid() != 0 {
		t.Skipf("no cgroups for plugins here (%s): they need root or a delegated cgroup v2 subtree", s.CgroupErr)
	}
	testenv.Missing(t, "cgroups with memory and pids for plugins (%s)", s.CgroupErr)
}

// limitedDeployment is hostileDeployment with limits on the sandboxed
// plugin ("caged"); it runs as root when the test does (no user). host is
// added to the host block.
func limitedDeployment(t *testing.T, dir, host, limits string) string {
	t.Helper()
	config := hostileDeployment(t, dir, host, "")
	hcl := replaceOnce(t, readFile(t, config), `network = "none"`, "network = \"none\"\n    limits {\n"+limits+"\n    }")
	writeFileAtomic(t, config, hcl)
	return config
}

// TestAttackSharedMemoryPastLimit: a sandboxed plugin with memory = 128MiB
// maps 1 GiB of shared anonymous memory and memfd, which RLIMIT_DATA does
// not count (with it alone, the plugin held the whole 1 GiB). Its cgroup
// stops it: the kernel kills the process at the limit, the call fails
// naming the crash, the host restarts the plugin, and status says what
// enforces the limit.
func TestAttackSharedMemoryPastLimit(t *testing.T) {
	needCgroups(t)
	dir := t.TempDir()
	metrics := freePort(t)
	config := limitedDeployment(t, dir, fmt.Sprintf("  metrics = %q\n", metrics), `      memory = "128MiB"`)
	h := startHost(t, config, 2)
	defer stopRunning(t, config, h)

	before := statusOf(t, config)["caged"]
	want := "memory 128MiB: cgroup " + sandbox.Detect(bins.Path("host")).Cgroup
	if !slices.ContainsFunc(before.Sandbox.Limits, func(l string) bool { return strings.HasPrefix(l, want) }) {
		t.Errorf("status limits %q, want one starting %q", before.Sandbox.Limits, want)
	}
	if out, _, _ := cli(t, "status", "-c", config); !strings.Contains(out, want) {
		t.Errorf("host status does not say how the memory limit is enforced:\n%s", out)
	}
	caged := map[string]string{"plugin": "caged"}
	if v, ok := metricValue(t, metrics, "plugkit_plugin_cgroup_memory_bytes", caged); !ok || v <= 0 || v > 128<<20 {
		t.Errorf("plugkit_plugin_cgroup_memory_bytes = %v (found %v), want within (0, 128 MiB]", v, ok)
	}

	args, _ := json.Marshal(map[string]any{"what": "share", "bytes": 1 << 30})
	r, _ := callJSON(t, config, "caged", string(args))
	t.Logf("share 1 GiB: ok=%v error=%+v", r.OK, r.Error)
	if r.OK {
		var o hostileOutcome
		_ = json.Unmarshal(r.Value, &o)
		if o.Done {
			t.Fatalf("the sandboxed plugin held 1 GiB of shared memory under a 128 MiB limit: %s", o.Detail)
		}
		t.Fatalf("the call ended without the process being stopped: %s", o.Detail)
	}

	// The host restarts it, in a new cgroup, and it works.
	var st admin.PluginStatus
	if !testkit.Eventually(30*time.Second, func() bool {
		st = statusOf(t, config)["caged"]
		return st.State == "ACTIVE" && st.PID != before.PID
	}) {
		t.Fatalf("caged did not come back: %+v", st)
	}
	t.Logf("restarted: pid %d → %d, last exit %q", before.PID, st.PID, st.LastExit)
	// The kernel's OOM kill, as a rule; a refusal at the limit that
	// the plugin died of (a thread it could not start) is the limit
	// holding too.
	killed := strings.Contains(st.LastExit, "killed by signal: killed (out of memory: the kernel killed it at its sandbox's limit, memory = 128MiB)")
	if !killed && !strings.Contains(st.LastExit, "(it had reached its sandbox's memory limit, memory = 128MiB)") {
		t.Errorf("last exit %q, want the kill at the limit; its stderr:\n%s", st.LastExit, strings.Join(st.Stderr, "\n"))
	}
	if o := hostileCall(t, config, "caged", map[string]any{"what": "share", "bytes": 32 << 20}); !o.Done {
		t.Errorf("share 32 MiB within the limit: %s", o.Detail)
	}
	wantKills := 0.0
	if killed {
		wantKills = 1
	}
	if v, _ := metricValue(t, metrics, "plugkit_plugin_oom_kills_total", caged); v != wantKills {
		t.Errorf("plugkit_plugin_oom_kills_total = %v, want %v", v, wantKills)
	}
	if v, _ := metricValue(t, metrics, "plugkit_plugin_cgroup_memory_bytes", caged); v < 32<<20 {
		t.Errorf("plugkit_plugin_cgroup_memory_bytes = %v after sharing 32 MiB, want at least that (resident memory would not count it)", v)
	}
	if o := hostileCall(t, config, "free", map[string]any{"what": "read", "path": config}); !o.Done {
		t.Errorf("the other plugin: %s", o.Detail)
	}
}

// TestAttackForkBombInCgroup: a sandboxed plugin with processes = 32, run
// as root with no user (where RLIMIT_NPROC does not apply), forks 1000
// processes: its cgroup's pids.max stops it short of 32, and the host keeps
// serving. A process it detaches from itself is killed with its cgroup
// when the host stops the plugin.
func TestAttackForkBombInCgroup(t *testing.T) {
	needCgroups(t)
	dir := t.TempDir()
	config := limitedDeployment(t, dir, "", `      processes = 32`)
	h := startHost(t, config, 2)

	if st := statusOf(t, config)["caged"]; st.Sandbox.State != sandbox.StateEnforced {
		t.Errorf("sandbox %s, want enforced (pids.max holds root too): %v", st.Sandbox, st.Sandbox.Gaps)
	}
	o := hostileCall(t, config, "caged", map[string]any{"what": "fork", "count": 1000})
	t.Logf("fork 1000: %s", o.Detail)
	if o.Done {
		t.Fatalf("the sandboxed plugin forked %s under processes = 32", o.Detail)
	}
	var n int
	if _, err := fmt.Sscanf(o.Detail, "fork %d:", &n); err != nil || n > 33 {
		t.Errorf("fork stopped at %q, want at most the 33rd fork", o.Detail)
	}
	if o := hostileCall(t, config, "free", map[string]any{"what": "read", "path": config}); !o.Done {
		t.Errorf("the other plugin after the fork bomb: %s", o.Detail)
	}

	d := hostileCall(t, config, "caged", map[string]any{"what": "detach"})
	pid, err := strconv.Atoi(d.Detail)
	if !d.Done || err != nil {
		t.Fatalf("detach: %s", d.Detail)
	}
	defer syscall.Kill(pid, syscall.SIGKILL)
	stopRunning(t, config, h)
	testkit.WaitFor(t, 10*time.Second, fmt.Sprintf("process %d, detached by the sandboxed plugin, to end with the host", pid), func() bool {
		return syscall.Kill(pid, 0) != nil || isZombie(pid)
	})
}

// metricValue scrapes addr and returns the series of family name whose
// labels include labels.
func metricValue(t *testing.T, addr, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(scrape(t, addr)))
	if err != nil {
		t.Fatal(err)
	}
	return value(families, name, labels)
}

// isZombie: pid has ended and waits for its parent (init) to reap it.
func isZombie(pid int) bool {
	b, err := readProcStat(pid)
	if err != nil {
		return true
	}
	f := strings.Fields(b[strings.LastIndexByte(b, ')')+1:])
	return len(f) > 0 && f[0] == "Z"
}
