package remote_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/remote"
)

// TestCallTransports: the host calls a plugin (Go or Python) on its call
// lanes, on its call stream without them, as RPCs when told to or when the
// plugin speaks protocol 1; each way the call is answered.
func TestCallTransports(t *testing.T) {
	// A plugin of protocol version 1, built before calls went as frames
	// (its SDK serves version 1 only): still served, with RPCs, whatever
	// its Describe says.
	v1 := filepath.Join(t.TempDir(), "testplugin-v1")
	if err := testkit.GoBuild(v1, "github.com/plugkit-go/plugkit/internal/testkit/testplugin", "-ldflags=-X github.com/plugkit-go/plugkit/shared/sdk.servedProtocols=1"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		opts     remote.Options
		python   bool
		binary   string
		want     string
		protocol int
	}{
		{"go", remote.Options{}, false, "", "lanes", 2},
		{"go of protocol 1", remote.Options{}, false, v1, "rpc", 1},
		{"go without lanes", remote.Options{NoCallLanes: true}, false, "", "stream", 2},
		{"go unary", remote.Options{UnaryCalls: true}, false, "", "rpc", 2},
		{"python", remote.Options{}, true, "", "lanes", 2},
		{"python without lanes", remote.Options{NoCallLanes: true}, true, "", "stream", 2},
		{"python unary", remote.Options{UnaryCalls: true}, true, "", "rpc", 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newBareHost(t, conformance.Config{}, tc.opts)
			if tc.python {
				h.binary = pythonPlugin(t)
			}
			if tc.binary != "" {
				h.binary = tc.binary
			}
			mustLoad(t, h, conformance.PluginSpec{Name: "P", Tools: []conformance.ToolSpec{addTool("")}}, pluginConfig{})
			if r := h.tools.Execute(context.Background(), "add", json.RawMessage(`{"a":2,"b":3}`), conformance.Caller); !r.OK || valueOf(r) != "5" {
				t.Fatalf("add = %s", describe(r))
			}
			got, protocol := "no status", 0
			for _, st := range h.m.Status() {
				if st.Name == "P" {
					got, protocol = st.Calls, st.Protocol
				}
			}
			if got != tc.want || protocol != tc.protocol {
				t.Fatalf("Status.Calls = %q, protocol %d; want %q, %d", got, protocol, tc.want, tc.protocol)
			}
		})
	}
}
