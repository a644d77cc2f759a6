package sdk

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// A plugin's durations reach the host's log as durations, not as JSON
// numbers of nanoseconds (waited=1.2e+11).
func TestDurationLogger(t *testing.T) {
	var out bytes.Buffer
	var log hclog.Logger = durationLogger{hclog.New(&hclog.LoggerOptions{Output: &out, JSONFormat: true})}
	log.Named("audit").With("limit", 5*time.Second).Warn("waiting for the lock", "waited", 2*time.Minute, "n", 3)
	var line map[string]any
	if err := json.Unmarshal(out.Bytes(), &line); err != nil {
		t.Fatalf("%v: %s", err, out.Bytes())
	}
	if line["waited"] != "2m0s" || line["limit"] != "5s" || line["n"] != float64(3) || line["@module"] != "audit" {
		t.Errorf("logged %s", out.Bytes())
	}
}
