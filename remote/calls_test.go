package remote_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/plugkit-go/plugkit/internal/conformance"
	"github.com/plugkit-go/plugkit/remote"
)

// TestCallTransports: the host calls a plugin (Go or Python) on its call
// lanes, on its call stream without them, as RPCs when told to; each way
// the call is answered.
func TestCallTransports(t *testing.T) {
	cases := []struct {
		name   string
		opts   remote.Options
		python bool
		want   string
	}{
		{"go", remote.Options{}, false, "lanes"},
		{"go without lanes", remote.Options{NoCallLanes: true}, false, "stream"},
		{"go unary", remote.Options{UnaryCalls: true}, false, "rpc"},
		{"python", remote.Options{}, true, "lanes"},
		{"python without lanes", remote.Options{NoCallLanes: true}, true, "stream"},
		{"python unary", remote.Options{UnaryCalls: true}, true, "rpc"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newBareHost(t, conformance.Config{}, tc.opts)
			if tc.python {
				h.binary = pythonPlugin(t)
			}
			mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
			if r := h.tools.Execute(context.Background(), "add", json.RawMessage(`{"a":2,"b":3}`), conformance.Caller); !r.OK || valueOf(r) != "5" {
				t.Fatalf("add = %s", describe(r))
			}
			got := "no status"
			for _, st := range h.m.Status() {
				if st.Name == "P" {
					got = st.Calls
				}
			}
			if got != tc.want {
				t.Fatalf("Status.Calls = %q, want %q", got, tc.want)
			}
		})
	}
}
