package wire

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestYamuxPeerGoneIsDebug: a read or write yamux fails because the
// connection was closed as a plugin process ended is logged at DEBUG, as go-plugin's logger is used
// (Named("yamux"), a standard logger inferring levels); yamux's other
// errors, and everything else, keep their level.
func TestYamuxPeerGoneIsDebug(t *testing.T) {
	var buf bytes.Buffer
	log := QuietYamux(hclog.New(&hclog.LoggerOptions{Name: "host.files", Output: &buf, Level: hclog.Trace}))
	std := log.Named("yamux").StandardLogger(&hclog.StandardLoggerOptions{InferLevels: true})
	std.Printf("[ERR] yamux: Failed to write header: write unix @->/tmp/p/plugin1: write: broken pipe")
	std.Printf("[ERR] yamux: Failed to write header: write unix @->/tmp/p/plugin1: use of closed network connection")
	std.Printf("[ERR] yamux: Failed to read stream data: read unix /tmp/p/plugin1->@: use of closed network connection")
	std.Printf("[ERR] yamux: keepalive failed: i/o deadline reached")
	log.Named("stdio").With("k", "v").Error("relayed")

	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 5 {
		t.Fatalf("%d lines:\n%s", len(lines), buf.String())
	}
	for i, want := range []string{"[DEBUG] host.files.yamux: yamux: Failed to write header", "[DEBUG] host.files.yamux: yamux: Failed to write header", "[DEBUG] host.files.yamux: yamux: Failed to read stream data", "[ERROR] host.files.yamux: yamux: keepalive failed", "[ERROR] host.files.stdio: relayed"} {
		if !strings.Contains(lines[i], want) {
			t.Errorf("line %d = %q, want %q", i+1, lines[i], want)
		}
	}
	if !strings.Contains(lines[0], "the connection was closed") {
		t.Errorf("the demoted line does not say why: %q", lines[0])
	}
}
