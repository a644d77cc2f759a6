package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// TestAttackPoisonedArgument: a call whose arguments crash a critical
// plugin's pre-execute listener (the hostile plugin exits when "what" is
// "poison") is retried alone in the next process; it crashes it alone, so
// the call is DENIED naming the crash and that second exit is not counted
// toward the restart budget. The same arguments sent again are denied
// without reaching the plugin, so seven more of them leave it ACTIVE in
// the same process with one restart; before, each one was a counted crash
// and the sixth left it FAILED, every call DENIED.
func TestAttackPoisonedArgument(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.hcl")
	src := fmt.Sprintf(`host {
  admin_socket = "run/host.sock"
}

plugin "safety" {
  path     = %q
  critical = true
  config {
    tool     = "attempt"
    crash_on = "poison"
  }
}
`, hostilePath(bins.Dir()))
	if err := os.WriteFile(config, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 1)
	defer func() {
		if _, stderr, code := cli(t, "stop", "-c", config); code != 0 {
			t.Errorf("host stop: exit %d: %s", code, stderr)
		}
		<-h.done
	}()
	const poison, normal = `{"what":"poison"}`, `{"what":"environ"}`
	if r, code := callJSON(t, config, "attempt", normal); code != 0 || !r.OK {
		t.Fatalf("a normal call: exit %d %+v\n%s", code, r, tail(h.stderr.String()))
	}
	pid0 := pluginStatus(t, config, "safety").PID

	r, _ := callJSON(t, config, "attempt", poison)
	if r.OK || r.Error == nil || r.Error.Code != "DENIED" || !strings.Contains(r.Error.Message, "crashed its pre-execute listener twice, the second time alone") {
		t.Fatalf("the poisoned call: %+v %+v; want DENIED naming the crash alone\n%s", r, r.Error, tail(h.stderr.String()))
	}
	t.Logf("poisoned call: %s: %s", r.Error.Code, r.Error.Message)
	st := waitServing(t, config, "safety", pid0)
	if st.Restarts != 1 || !strings.Contains(st.LastExit, "not counted") {
		t.Errorf("after the poisoned call, safety: restarts %d, last exit %q; want the first crash counted and the one alone not", st.Restarts, st.LastExit)
	}
	if r, code := callJSON(t, config, "attempt", normal); code != 0 || !r.OK {
		t.Fatalf("a normal call after the poisoned one: exit %d %+v\n%s", code, r, tail(h.stderr.String()))
	}

	for i := range 7 {
		r, _ := callJSON(t, config, "attempt", poison)
		if r.OK || r.Error == nil || r.Error.Code != "DENIED" || !strings.Contains(r.Error.Message, "crashed its pre-execute listener") {
			t.Fatalf("poisoned call %d again: %+v %+v; want DENIED naming the crash\n%s", i, r, r.Error, tail(h.stderr.String()))
		}
		if now := pluginStatus(t, config, "safety"); now.State != "ACTIVE" || now.PID != st.PID || now.Restarts != 1 {
			t.Fatalf("after poisoned call %d again, safety is %s in pid %d after %d restarts; want ACTIVE in pid %d after 1\n%s",
				i, now.State, now.PID, now.Restarts, st.PID, tail(h.stderr.String()))
		}
	}
	if r, code := callJSON(t, config, "attempt", normal); code != 0 || !r.OK {
		t.Errorf("a normal call after the poisoned ones: exit %d %+v\n%s", code, r, tail(h.stderr.String()))
	}

	// Seven different crashing arguments: each crashes it twice (the
	// restart count says so), and neither crash is charged to the budget,
	// so it is never FAILED.
	for i := range 7 {
		before := pluginStatus(t, config, "safety")
		r, _ := callJSON(t, config, "attempt", fmt.Sprintf(`{"what":"poison-%d"}`, i))
		if r.OK || r.Error == nil || r.Error.Code != "DENIED" || !strings.Contains(r.Error.Message, "the second time alone") {
			t.Fatalf("varied poisoned call %d: %+v %+v; want DENIED naming the crash alone\n%s", i, r, r.Error, tail(h.stderr.String()))
		}
		st = waitServing(t, config, "safety", before.PID)
		if st.Restarts != before.Restarts+1 {
			t.Errorf("varied poisoned call %d: restarts %d → %d; want its first crash counted", i, before.Restarts, st.Restarts)
		}
	}
	if r, code := callJSON(t, config, "attempt", normal); code != 0 || !r.OK {
		t.Errorf("a normal call after the varied poisoned ones: exit %d %+v\n%s", code, r, tail(h.stderr.String()))
	}
}

// waitServing waits for plugin to be ACTIVE after two exits: its process
// old crashed, the next one too (the last exit recorded names neither old
// nor the process that now serves).
func waitServing(t *testing.T, config, plugin string, old int) admin.PluginStatus {
	t.Helper()
	var st admin.PluginStatus
	if !testkit.Eventually(60*time.Second, func() bool {
		st = pluginStatus(t, config, plugin)
		return st.State == "ACTIVE" && st.PID > 0 && st.PID != old && st.LastExit != "" &&
			!strings.Contains(st.LastExit, "process "+strconv.Itoa(old)+" ") && !strings.Contains(st.LastExit, "process "+strconv.Itoa(st.PID)+" ")
	}) {
		t.Fatalf("%s not serving again after two exits: %+v", plugin, st)
	}
	return st
}
