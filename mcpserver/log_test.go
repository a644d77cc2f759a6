package mcpserver

import (
	"bytes"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// TestAbandonedSessionNotificationNotWarned: the SDK's warning that a
// list_changed notification found an abandoned HTTP session's stream closed
// is logged at DEBUG; its other warnings stay warnings.
func TestAbandonedSessionNotificationNotWarned(t *testing.T) {
	var buf bytes.Buffer
	log := newSlog(hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Debug}))
	log.Warn("calling notifications/tools/list_changed: rejected by transport: undelivered message: stream not connected or already closed")
	log.Warn("something else went wrong")
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %q", buf.String())
	}
	if !strings.Contains(lines[0], "[DEBUG]") {
		t.Errorf("an undelivered list_changed is logged above DEBUG: %s", lines[0])
	}
	if !strings.Contains(lines[1], "[WARN]") {
		t.Errorf("another SDK warning is not a warning: %s", lines[1])
	}
}
