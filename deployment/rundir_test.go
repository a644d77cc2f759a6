package deployment

import (
	"strings"
	"testing"
)

// TestParseRunDir: run_dir is read (the host hands it to the plugin
// manager, TestManagerOptions); an empty one, or one too long for the sockets
// below it, is an error at its line.
func TestParseRunDir(t *testing.T) {
	t.Parallel()
	d := parseClean(t, "host {\n  run_dir = \"/run/plugkit\"\n}\n")
	if want := "/run/plugkit"; d.Host.RunDir != want {
		t.Errorf("run_dir %q, want %q", d.Host.RunDir, want)
	}
	if d := parseClean(t, "host {}\n"); d.Host.RunDir != "" {
		t.Errorf("no run_dir: %q, want \"\" (TMPDIR)", d.Host.RunDir)
	}
	for src, want := range map[string]string{
		"host {\n  run_dir = \"\"\n}\n":                                 `deploy.hcl:2:13: Invalid run_dir: run_dir must not be empty`,
		"host {\n  run_dir = \"/" + strings.Repeat("d", 60) + "\"\n}\n": `deploy.hcl:2:13: Invalid run_dir: run_dir /dddd`,
	} {
		_, diags := Parse(writeDeployment(t, src))
		if got := Format(diags); !strings.Contains(got, want) {
			t.Errorf("%q:\n%s\nwant %q", src, got, want)
		}
	}
}
