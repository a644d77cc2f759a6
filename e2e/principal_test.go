package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// TestPrincipalThroughThePipeline: a call over the admin socket is made
// for the OS user who made it (the kernel's word for it, SO_PEERCRED), a
// safety rule about callers applies to that user and to nobody else, and
// the audit log records whom each call was for.
func TestPrincipalThroughThePipeline(t *testing.T) {
	needShippedDeployment(t)
	me := admin.LocalPrincipal(os.Getuid())
	h := startFaultHost(t, deploymentTweaks{safetyRules: fmt.Sprintf(`    deny "not-for-me" {
      tools   = ["read_file"]
      callers = [%q]
    }
    deny "for-others" {
      tools       = ["list_dir"]
      not_callers = [%q]
    }
    deny "for-a-group-i-am-not-in" {
      tools   = ["search"]
      callers = ["group:no-such-group-here"]
    }
`, me.String(), me.String())})

	r, _ := callJSON(t, h.config, "read_file", `{"path":"notes.md"}`)
	want := fmt.Sprintf(`denied by safety rule "not-for-me": tool "read_file" matches "read_file", for %s`, me)
	if r.OK || r.Error == nil || r.Error.Code != "DENIED" || r.Error.Message != want {
		t.Errorf("read_file: %+v %+v, want DENIED %q", r, r.Error, want)
	}
	if r, _ := callJSON(t, h.config, "list_dir", `{"path":"."}`); !r.OK {
		t.Errorf("list_dir, which only others are denied: %+v", r)
	}
	if r, _ := callJSON(t, h.config, "search", `{"q":"reload"}`); !r.OK {
		t.Errorf("search, denied to a group %s is not in: %+v", me, r)
	}

	logPath := filepath.Join(h.dir, "run", "audit", "audit.log")
	for _, text := range strings.Split(strings.TrimSpace(waitAuditLines(t, logPath, 3)), "\n") {
		l, err := auditlog.ParseLine([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		if l.Principal != me.ID || l.PrincipalKind != "local" {
			t.Errorf("audit line %d (%s): principal %q of kind %q, want %q local", l.Seq, l.Tool, l.Principal, l.PrincipalKind, me.ID)
		}
	}
	if out, err := exec.Command(pluginPath("audit"), "verify", logPath).CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v\n%s", err, out)
	}
}

// TestPerPrincipalLimit: past its rate, a principal's call over the admin
// socket is DENIED, saying it was rate-limited, by "limits".
func TestPerPrincipalLimit(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	config := deploymentFileWith(t, dir, deploymentTweaks{})
	data, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	limited := strings.Replace(string(data), "    concurrency = 8\n", "    concurrency = 8\n    per_principal {\n      rate  = 0.001\n      burst = 2\n    }\n", 1)
	if limited == string(data) {
		t.Fatal("the deployment file has no policy block to add to")
	}
	if err := os.WriteFile(config, []byte(limited), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startFaultHostWith(t, dir, config)
	for i := range 2 {
		if r, _ := callJSON(t, h.config, "list_dir", `{"path":"."}`); !r.OK {
			t.Fatalf("call %d within the burst: %+v", i+1, r)
		}
	}
	r, _ := callJSON(t, h.config, "list_dir", `{"path":"."}`)
	if r.OK || r.Error == nil || r.Error.Code != "DENIED" || r.DecidedBy != "limits" || !strings.Contains(r.Error.Message, "rate-limited: local:") {
		t.Errorf("call past the burst: %+v %+v", r, r.Error)
	}
}
