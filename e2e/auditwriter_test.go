package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// TestSecondAuditWriterRefused: beside a running host, a second host, or
// `host test` with a case that executes, on the same audit log refuses to
// start, naming the host that writes it, rather than serve calls it never
// audits (it used to wait for the lock forever, signals ignored). `host
// test` that only explains still runs beside it: it writes nothing.
func TestSecondAuditWriterRefused(t *testing.T) {
	needBinaries(t)
	first := startHost(t, deploymentFile(t, t.TempDir()), 5)
	logPath := filepath.Join(filepath.Dir(first.cmd.Args[len(first.cmd.Args)-1]), "run", "audit", "audit.log")
	if _, err := os.Stat(logPath); err != nil {
		t.Fatalf("the first host's audit log: %v", err)
	}
	dir := t.TempDir()
	config := filepath.Join(dir, "config.hcl")
	hcl := fmt.Sprintf(`host {
  admin_socket = "run/host.sock"
}
plugin "safety" {
  path = %q
}
plugin "audit" {
  path     = %q
  critical = true
  config {
    path = %q
  }
}
`, pluginPath("safety"), pluginPath("audit"), logPath)
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := func(execute bool) string {
		p := filepath.Join(dir, fmt.Sprintf("cases_%v.hcl", execute))
		src := fmt.Sprintf("case \"unknown\" {\n  tool    = \"no_such_tool\"\n  expect  = \"UNKNOWN_TOOL\"\n  execute = %v\n}\n", execute)
		if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	want := fmt.Sprintf("is being written by another host's audit plugin (host process %d,", first.cmd.Process.Pid)

	// A second host: its audit plugin fails at start, naming the first
	// host, and every call is denied meanwhile (audit is critical); it
	// stops on SIGTERM.
	second := exec.Command(bins.Path("host"), "run", "-c", config)
	var secondLog testkit.Buffer
	second.Stdout, second.Stderr = &secondLog, &secondLog
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	secondDone := make(chan error, 1)
	go func() { secondDone <- second.Wait() }()
	defer func() {
		if second.ProcessState == nil {
			_ = second.Process.Kill()
			<-secondDone
		}
	}()
	var audit admin.PluginStatus
	testkit.Eventually(60*time.Second, func() bool {
		if out, _, code := cli(t, "status", "--json", "-c", config); code == 0 {
			var st admin.Status
			if json.Unmarshal([]byte(out), &st) == nil {
				for _, p := range st.Plugins {
					if p.Name == "audit" && p.State == "FAILED" {
						audit = p
					}
				}
			}
		}
		return audit.Name != ""
	})
	if !strings.Contains(audit.LastError, want) {
		t.Fatalf("the second host's audit plugin: %+v, want FAILED saying %q\n%s", audit, want, secondLog.String())
	}
	if res, _ := callJSON(t, config, "no_such_tool", `{}`); res.OK || res.Error == nil || res.Error.Code != "DENIED" || !strings.Contains(res.Error.Message, "audit") {
		t.Errorf("a call to the second host: %+v, want DENIED naming audit", res)
	}
	if err := second.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-secondDone; err != nil {
		t.Errorf("the second host on SIGTERM: %v\n%s", err, secondLog.String())
	}

	for _, tc := range []struct {
		name string
		args []string
		code int
	}{
		{"host test, executing", []string{"test", "-c", config, cases(true)}, exitFailed},
		{"host test, explaining", []string{"test", "-c", config, cases(false)}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// The bound only keeps a hang from hanging the test: a refusal
			// comes as soon as the plugins have started.
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, bins.Path("host"), tc.args...)
			out, err := cmd.CombinedOutput()
			if ctx.Err() != nil {
				t.Fatalf("%s did not end:\n%s", tc.name, out)
			}
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.code {
				t.Errorf("exit %d, want %d:\n%s", code, tc.code, out)
			}
			if says := strings.Contains(string(out), want); says != (tc.code != 0) {
				t.Errorf("says %q: %v, want %v:\n%s", want, says, tc.code != 0, out)
			}
		})
	}
	// The first host is untouched: it still serves and audits.
	if res, code := callJSON(t, filepath.Join(filepath.Dir(logPath), "..", "..", "config.hcl"), "search", `{"q":"plugin"}`); code != 0 {
		t.Errorf("the first host after the refusals: exit %d, %+v", code, res)
	}
}
