package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
)

// bigArgsHost starts the shipped deployment with safety (critical) limited
// to 256 MiB, as the sandboxing guide's example has it, and a plugin,
// agent, whose control tool calls tools back through the host
// (ExecuteTool).
func bigArgsHost(t *testing.T) *faultHost {
	t.Helper()
	dir := t.TempDir()
	tw := faultTweaks()
	plugin := tw.plugin
	tw.plugin = func(name string) string {
		if name == "safety" {
			return plugin(name) + "  sandbox {\n    limits {\n      memory = \"256MiB\"\n    }\n  }\n"
		}
		return plugin(name)
	}
	tw.more = fmt.Sprintf(`
plugin "agent" {
  path = %q
  config {
    spec    = { name = "agent" }
    control = "agent_ctl"
  }
}
`, buildTestPlugin(t))
	config := deploymentFileWith(t, dir, tw)
	h := &faultHost{dir: dir, config: config, socket: filepath.Join(dir, "run", "host.sock"), pids: map[int]string{}}
	h.run = startHost(t, config, len(shippedPlugins)+1)
	h.client = admin.NewClient(h.socket)
	h.notePIDs(t, h.status(t))
	return h
}

// TestAttackLargeArguments: a plugin calling read_file through the host
// with a 50 MB argument, seven times, and a 50 MB call on the admin
// socket. Each is refused INVALID_ARGUMENTS (the admin request 413) naming
// max_argument_bytes before safety, critical at 256 MiB, is handed it:
// safety keeps its process, its restart count does not climb, and calls
// keep being served. (Before the bound, each such call OOM-killed safety;
// seven left it FAILED and every call DENIED.)
func TestAttackLargeArguments(t *testing.T) {
	needShippedDeployment(t)
	h := bigArgsHost(t)
	defer h.stop(t)
	safety := h.status(t)["safety"]
	const big = 50_000_000
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()

	for i := range 7 {
		args := fmt.Sprintf(`{"op":"execute_blob","tool":"read_file","name":"path","n":%d}`, big)
		r, err := h.client.Call(ctx, "agent_ctl", json.RawMessage(args), nil)
		if err != nil {
			t.Fatalf("call %d: %v\n%s", i, err, tail(h.run.stderr.String()))
		}
		if !r.OK {
			t.Fatalf("call %d: agent_ctl failed: %+v\n%s", i, r.Error, tail(h.run.stderr.String()))
		}
		var inner struct {
			OK    bool
			Error *struct{ Code, Message string }
		}
		if err := json.Unmarshal(r.Value, &inner); err != nil {
			t.Fatalf("call %d: agent_ctl's value %.200s: %v", i, r.Value, err)
		}
		if inner.OK || inner.Error == nil || inner.Error.Code != "INVALID_ARGUMENTS" || !strings.Contains(inner.Error.Message, "max_argument_bytes") {
			t.Fatalf("call %d: read_file with a 50 MB path through ExecuteTool = %+v; want INVALID_ARGUMENTS naming max_argument_bytes", i, inner)
		}
		if i == 0 {
			t.Logf("through ExecuteTool: %s: %s", inner.Error.Code, inner.Error.Message)
		}
	}

	// The admin socket: refused before the body is read.
	_, err := h.client.Call(ctx, "read_file", json.RawMessage(`{"path":"`+strings.Repeat("x", big)+`"}`), nil)
	if err == nil || !strings.Contains(err.Error(), "max_argument_bytes") {
		t.Errorf("a 50 MB call on the admin socket: %v; want it refused naming max_argument_bytes", err)
	} else {
		t.Logf("admin socket: %v", err)
	}

	st := h.status(t)["safety"]
	if st.State != "ACTIVE" || st.PID != safety.PID || st.Restarts != safety.Restarts {
		t.Errorf("after the large arguments, safety is %s in pid %d after %d restarts (was pid %d, %d restarts); want it untouched\nhost log:\n%s",
			st.State, st.PID, st.Restarts, safety.PID, safety.Restarts, tail(h.run.stderr.String()))
	}
	if r, code := callJSON(t, h.config, "read_file", `{"path":"notes.md"}`); code != 0 || !r.OK {
		t.Errorf("read_file after the large arguments: exit %d %+v", code, r)
	}
	if r, _ := callJSON(t, h.config, "read_file", `{"path":"/etc/passwd"}`); r.OK || r.Error == nil || r.Error.Code != "DENIED" {
		t.Errorf("read_file /etc/passwd after the large arguments: %+v; want safety to deny it", r)
	}
}
