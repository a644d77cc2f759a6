package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
)

// TestAttackPoisonedArgumentInGuard: a call whose arguments crash a
// critical plugin's guard (stage 2) while two other calls are in that
// guard (the tool is another plugin's, as safety's guards are for every
// tool). The two neighbours are asked again alone in the next process and
// served; the crashing call is asked again alone, crashes it alone, and is
// DENIED naming the crash, with that second exit not counted toward the
// restart budget; the same arguments again are denied without reaching
// the plugin. Before, the neighbours were DENIED with the crasher ("guard
// of safety failed: plugin process exited"), and every such call was a
// counted crash.
func TestAttackPoisonedArgumentInGuard(t *testing.T) {
	testPoisonBeside(t, "guard", "guard")
}

// TestAttackPoisonedArgumentInWrapper: the same with the crashing
// listener a wrapping pre-execute listener (stage 1), which calls next
// after its check; before, the neighbours were DENIED ("pre-execute
// listener of safety failed: plugin process exited").
func TestAttackPoisonedArgumentInWrapper(t *testing.T) {
	testPoisonBeside(t, "wrap", "pre-execute listener")
}

// testPoisonBeside runs the attack with the crasher where crashIn says;
// kind is what the denial names.
func testPoisonBeside(t *testing.T, crashIn, kind string) {
	needShippedDeployment(t)
	dir := t.TempDir()
	config := filepath.Join(dir, "config.hcl")
	crashLog := filepath.Join(dir, "crashes.log")
	src := fmt.Sprintf(`host {
  admin_socket = "run/host.sock"
}

plugin "worker" {
  path = %q
  config {
    tool = "attempt"
  }
}

plugin "safety" {
  path     = %q
  critical = true
  config {
    tool         = "safety_probe"
    crash_on     = "poison"
    crash_in     = %q
    crash_beside = 2
    crash_log    = %q
  }
}
`, hostilePath(bins.Dir()), hostilePath(bins.Dir()), crashIn, crashLog)
	if err := os.WriteFile(config, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 2)
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

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := admin.NewClient(filepath.Join(dir, "run", "host.sock"))
	args := []string{`{"what":"neighbour-1"}`, `{"what":"neighbour-2"}`, poison}
	results := make([]admin.Result, len(args))
	errs := make([]error, len(args))
	var wg sync.WaitGroup
	for i, a := range args {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = client.Call(ctx, "attempt", json.RawMessage(a), nil)
		}()
	}
	wg.Wait()
	// The first exit, with both neighbours in the listener; the second, alone.
	crashes, err := os.ReadFile(crashLog)
	if err != nil || !strings.HasPrefix(string(crashes), "hostile: crashing with 2 neighbour calls in flight\n") {
		t.Fatalf("the crashing call did not crash with both neighbours in the listener: %v %q\n%s", err, crashes, tail(h.stderr.String()))
	}
	for i, a := range args[:2] {
		if errs[i] != nil || !results[i].OK {
			t.Errorf("neighbour %s, in the listener when another call's arguments crashed it: %v %+v %+v; want it served", a, errs[i], results[i], results[i].Error)
		}
	}
	r := results[2]
	if errs[2] != nil || r.OK || r.Error == nil || r.Error.Code != "DENIED" || !strings.Contains(r.Error.Message, "crashed its "+kind+" twice, the second time alone") {
		t.Fatalf("the poisoned call: %v %+v %+v; want DENIED naming the crash alone\n%s", errs[2], r, r.Error, tail(h.stderr.String()))
	}
	t.Logf("poisoned call: %s: %s", r.Error.Code, r.Error.Message)
	st := waitServing(t, config, "safety", pid0)
	if st.Restarts != 1 || !strings.Contains(st.LastExit, "not counted") {
		t.Errorf("after the poisoned call, safety: restarts %d, last exit %q; want the first crash counted and the one alone not", st.Restarts, st.LastExit)
	}

	for i := range 3 {
		r, _ := callJSON(t, config, "attempt", poison)
		if r.OK || r.Error == nil || r.Error.Code != "DENIED" || !strings.Contains(r.Error.Message, "crashed its "+kind+" when retried alone before") {
			t.Fatalf("poisoned call %d again: %+v %+v; want DENIED naming the crash\n%s", i, r, r.Error, tail(h.stderr.String()))
		}
		if now := pluginStatus(t, config, "safety"); now.State != "ACTIVE" || now.PID != st.PID || now.Restarts != 1 {
			t.Fatalf("after poisoned call %d again, safety is %s in pid %d after %d restarts; want ACTIVE in pid %d after 1", i, now.State, now.PID, now.Restarts, st.PID)
		}
	}
	if r, code := callJSON(t, config, "attempt", normal); code != 0 || !r.OK {
		t.Errorf("a normal call after the poisoned ones: exit %d %+v\n%s", code, r, tail(h.stderr.String()))
	}
}
