package server

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/hcl/v2"
)

// TestReloadReportSaysOneThing: a reload with errors logs what the CLI
// prints, whether nothing changed (an invalid file) or part of it was
// applied (a plugin whose new version did not start).
func TestReloadReportSaysOneThing(t *testing.T) {
	bad := hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Some plugins did not start", Detail: "files: exit status 3"}}
	for _, tc := range []struct{ summary, want string }{
		{"", "the deployment file is not valid; nothing changed"},
		{"reloaded config.hcl: none added, none removed, safety reloaded, 3 unchanged; files kept the running version",
			"reloaded config.hcl: none added, none removed, safety reloaded, 3 unchanged; files kept the running version"},
	} {
		var buf bytes.Buffer
		log := hclog.New(&hclog.LoggerOptions{Output: &buf})
		_, err := reported(log, tc.summary, bad)
		if err == nil {
			t.Fatalf("summary %q: no error", tc.summary)
		}
		first, _, _ := strings.Cut(err.Error(), "\n")
		if first != tc.want {
			t.Errorf("the CLI says %q; want %q", first, tc.want)
		}
		if !strings.Contains(buf.String(), "[ERROR] "+tc.want) {
			t.Errorf("the log says %q; want it to say %q as the CLI does", buf.String(), tc.want)
		}
		if tc.summary != "" && strings.Contains(buf.String(), "nothing changed") {
			t.Errorf("a partly applied reload is logged as changing nothing: %s", buf.String())
		}
	}
}
