package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// TestShadowRuleEndToEnd, through the real binaries: a safety rule put in
// shadow by the deployment's shadow block lets the calls it would deny
// run; their audit lines carry what it would have decided (and the log
// verifies), the metric counts them and explain shows them. A canary
// (enforce_for) changed by a reload, without restarting safety, enforces
// the rule for the principals it selects and shadows it for the others.
func TestShadowRuleEndToEnd(t *testing.T) {
	needShippedDeployment(t)
	me := admin.LocalPrincipal(os.Getuid())
	addr := freePort(t)
	shadow := func(enforceFor string) string {
		return fmt.Sprintf("  shadow {\n    rules = [\"no-list\"]\n%s  }\n", enforceFor)
	}
	tw := deploymentTweaks{
		host: fmt.Sprintf("  metrics = %q\n", addr),
		safetyRules: `    deny "no-list" {
      tools  = ["list_dir"]
      reason = "listing is being retired"
    }
`,
		plugin: func(name string) string {
			if name == "safety" {
				return shadow("")
			}
			return ""
		},
	}
	dir := t.TempDir()
	config := deploymentFileWith(t, dir, tw)
	h := startFaultHostWith(t, dir, config)
	logPath := filepath.Join(h.dir, "run", "audit", "audit.log")

	// In shadow: the call runs, and the enforced rule beside it still denies.
	if r, _ := callJSON(t, config, "list_dir", `{"path":"."}`); !r.OK {
		t.Fatalf("list_dir with its rule in shadow: %+v %+v", r, r.Error)
	}
	if r, _ := callJSON(t, config, "read_file", `{"path":"../outside.txt"}`); r.OK || r.Error.Code != "DENIED" || r.DecidedBy != "safety" {
		t.Fatalf("read_file outside the root, a rule not in shadow: %+v", r)
	}
	out, _, code := cli(t, "explain", "-c", config, "list_dir", `{"path":"."}`)
	wantShadow := `shadow: would be DENIED by safety, rule "no-list" (not applied): denied by safety rule "no-list": listing is being retired`
	if code != exitOK || !strings.Contains(out, "would run") || !strings.Contains(out, wantShadow) || !strings.Contains(out, `shadow deny (rule "no-list")`) {
		t.Fatalf("explain list_dir: exit %d\n%s", code, out)
	}

	t.Logf("host explain:\n%s", out)

	// The canary selects me: enforced for me, after a reload that leaves
	// safety running.
	pid := pidOf(t, h, "safety")
	rewrite := func(enforceFor string) {
		t.Helper()
		tw.plugin = func(name string) string {
			if name == "safety" {
				return shadow(enforceFor)
			}
			return ""
		}
		deploymentFileWith(t, dir, tw)
		if _, stderr, code := cli(t, "reload", "-c", config); code != 0 {
			t.Fatalf("reload: exit %d %s", code, stderr)
		}
	}
	rewrite(fmt.Sprintf("    enforce_for = [%q]\n", me.String()))
	if r, _ := callJSON(t, config, "list_dir", `{"path":"."}`); r.OK || r.Error.Code != "DENIED" || r.DecidedBy != "safety" ||
		!strings.Contains(r.Error.Message, `"no-list"`) {
		t.Fatalf("list_dir for the canary %s: %+v %+v", me, r, r.Error)
	}
	// A canary I am not in: in shadow for me again.
	rewrite("    enforce_for = [\"group:canary\"]\n")
	if r, _ := callJSON(t, config, "list_dir", `{"path":"."}`); !r.OK {
		t.Fatalf("list_dir outside the canary: %+v %+v", r, r.Error)
	}
	if got := pidOf(t, h, "safety"); got != pid {
		t.Errorf("safety restarted for a shadow block's change (pid %d, then %d)", pid, got)
	}

	var shadowed []uint64
	for _, text := range strings.Split(strings.TrimSpace(waitAuditLines(t, logPath, 4)), "\n") {
		l, err := auditlog.ParseLine([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case l.Tool == "list_dir" && l.OK:
			want := []auditlog.Shadow{{Stage: 2, Plugin: "safety", Rule: "no-list", Would: "DENIED",
				Reason: `denied by safety rule "no-list": listing is being retired (tool "list_dir" matches "list_dir")`}}
			if fmt.Sprint(l.Shadow) != fmt.Sprint(want) {
				t.Errorf("audit line %d: shadow %+v, want %+v", l.Seq, l.Shadow, want)
			}
			shadowed = append(shadowed, l.Seq)
		case l.Shadow != nil:
			t.Errorf("audit line %d (%s, %s): shadow %+v", l.Seq, l.Tool, l.Code, l.Shadow)
		}
	}
	if len(shadowed) != 2 {
		t.Errorf("%d audit lines with a shadow decision, want 2", len(shadowed))
	}
	if out, err := exec.Command(pluginPath("audit"), "verify", logPath).CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v\n%s", err, out)
	}

	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(scrape(t, addr)))
	if err != nil {
		t.Fatal(err)
	}
	if v, _ := value(families, "plugkit_shadow_decisions_total", map[string]string{"plugin": "safety", "rule": "no-list", "would": "DENIED"}); v != 2 {
		t.Errorf("plugkit_shadow_decisions_total{safety,no-list,DENIED} = %v, want 2", v)
	}
}

// pidOf is plugin's process id.
func pidOf(t *testing.T, h *faultHost, plugin string) int {
	t.Helper()
	p, ok := h.status(t)[plugin]
	if !ok || p.PID == 0 {
		t.Fatalf("no process for %s", plugin)
	}
	return p.PID
}
