package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

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

	// The audit plugin gets its results on a stream: wait for the three.
	logPath := filepath.Join(h.dir, "run", "audit.log")
	var lines []auditlog.Line
	for deadline := time.Now().Add(30 * time.Second); len(lines) < 3; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d audit lines, want 3", len(lines))
		}
		lines = nil
		b, _ := os.ReadFile(logPath)
		for _, text := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l, err := auditlog.ParseLine([]byte(text)); err == nil {
				lines = append(lines, l)
			}
		}
	}
	for _, l := range lines {
		if l.Principal != me.ID || l.PrincipalKind != "local" {
			t.Errorf("audit line %d (%s): principal %q of kind %q, want %q local", l.Seq, l.Tool, l.Principal, l.PrincipalKind, me.ID)
		}
	}
	if out, err := exec.Command(pluginPath("audit"), "verify", logPath).CombinedOutput(); err != nil {
		t.Errorf("audit verify: %v\n%s", err, out)
	}
}
