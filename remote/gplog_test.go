package remote

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// go-plugin names a process's stderr logger after the binary it started;
// the plugin's lines stay under host.NAME whatever that binary is.
func TestGoPluginLogKeepsThePluginsName(t *testing.T) {
	var out bytes.Buffer
	base := hclog.New(&hclog.LoggerOptions{Name: "host", Output: &out}).Named("index")
	var l hclog.Logger = goPluginLog{base}
	l.Named("host").Info("indexed")
	if got := out.String(); !strings.Contains(got, " host.index: indexed") {
		t.Errorf("logged %q, want it under host.index", got)
	}
}
