package e2e

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestRunLogNamesOnlyPlugins: a run's log names each plugin's lines
// host.NAME whatever binary runs it (go-plugin named them host.audit.audit,
// host.index.host under the sandbox launcher), and lists at start and stop
// the plugins of the deployment, not the host's own parts (tools, host,
// timeout, concurrency).
func TestRunLogNamesOnlyPlugins(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	config := writeFilesAudit(t, dir, "audit.log")
	// The host's own policies, which run as kernel plugins.
	src, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	src = []byte(strings.Replace(string(src), "host {\n", "host {\n  policy {\n    timeout     = true\n    concurrency = 4\n  }\n", 1))
	if err := os.WriteFile(config, src, 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 2)
	if _, stderr, code := cli(t, "stop", "-c", config); code != 0 {
		t.Fatalf("stop: exit %d %s", code, stderr)
	}
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		t.Fatal("host run did not stop")
	}
	log := h.stderr.String()
	if !strings.Contains(log, " host.audit: audit log opened") {
		t.Errorf("the audit plugin's line is not under host.audit:\n%s", log)
	}
	named := regexp.MustCompile(`\] +host\.(files|audit)\.[a-z]+`)
	for _, line := range strings.Split(log, "\n") {
		if named.MatchString(line) {
			t.Errorf("a plugin's line named after its binary: %s", line)
		}
		for _, part := range []string{"tools", "host", "timeout", "concurrency"} {
			if strings.Contains(line, fmt.Sprintf("plugin state: plugin=%s ", part)) {
				t.Errorf("the host's own part %s logged as a plugin: %s", part, line)
			}
		}
	}
	if !strings.Contains(log, "plugin state: plugin=files state=DISPOSED") {
		t.Errorf("the plugins' own states are gone too:\n%s", log)
	}
}
