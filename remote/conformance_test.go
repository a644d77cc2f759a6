package remote_test

import (
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/remote"
	"github.com/plugkit-go/plugkit/sandbox"
)

// TestConformance runs every case of CONFORMANCE.md, the (remote) ones
// included, with each plugin under test in a process of its own.
func TestConformance(t *testing.T) {
	conformance.Run(t, processHarness{})
}

// TestConformanceSandboxed runs the same cases with every plugin under test
// confined (testSandbox): the handshake, AutoMTLS, the broker callback,
// stderr, crashes, restarts and reloads work the same sandboxed.
func TestConformanceSandboxed(t *testing.T) {
	conformance.Run(t, processHarness{sandboxed: true})
}

// TestConformanceStream runs the same cases with no call lanes
// (Options.NoCallLanes): the host's calls go on the plugin's call stream
// (Plugin.Calls), the plugin's calls back as RPCs, as with a plugin that
// serves the stream but not the lanes.
func TestConformanceStream(t *testing.T) {
	conformance.Run(t, processHarness{opts: remote.Options{NoCallLanes: true}})
}

// TestConformanceUnary runs the same cases with every call into a plugin,
// and back, as an RPC of its own (Options.UnaryCalls) rather than as
// frames: what a plugin that serves neither lanes nor stream gets.
func TestConformanceUnary(t *testing.T) {
	conformance.Run(t, processHarness{opts: remote.Options{UnaryCalls: true}})
}

// TestConformancePython runs the same cases with every plugin under test
// written in Python (internal/testkit/pytestplugin, on the SDK in sdk/python),
// through the same host, AutoMTLS on: the protocol as shared/README.md
// describes it, spoken by a stock gRPC library.
func TestConformancePython(t *testing.T) {
	conformance.Run(t, processHarness{python: true})
}

// TestConformancePythonStream is TestConformancePython on the call stream
// instead of the call lane.
func TestConformancePythonStream(t *testing.T) {
	conformance.Run(t, processHarness{python: true, opts: remote.Options{NoCallLanes: true}})
}

// TestConformancePythonUnary is TestConformancePython with a call per RPC
// instead of frames.
func TestConformancePythonUnary(t *testing.T) {
	conformance.Run(t, processHarness{python: true, opts: remote.Options{UnaryCalls: true}})
}

// testSandbox is the least a test plugin needs: its log folder (the
// host's dir) to write, no network.
func testSandbox(dir string) *sandbox.Policy {
	return &sandbox.Policy{Write: []string{dir}, Network: sandbox.Network{Mode: sandbox.NetworkNone}}
}
