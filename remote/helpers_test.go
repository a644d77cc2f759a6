package remote_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/conformance"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/remote"
)

// addSchema requires two numbers.
const addSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

// addTool is the fixture's add tool.
func addTool(log string) conformance.ToolSpec {
	return conformance.ToolSpec{Name: "add", Description: "Adds a and b.", Parameters: addSchema, Body: conformance.BodyAdd, Log: log}
}

// echoTool returns its arguments.
func echoTool(name string) conformance.ToolSpec {
	return conformance.ToolSpec{Name: name, Description: "Echoes.", Body: conformance.BodyEcho}
}

// mustLoad loads a test plugin, failing t when it does not load.
func mustLoad(t testing.TB, h *processHost, p conformance.PluginSpec, extra pluginConfig, env ...string) {
	t.Helper()
	if err := h.load(t, p, extra, env); err != nil {
		t.Fatalf("load %s: %v", p.Name, err)
	}
}

// pidOf returns the pid of the plugin's current process.
func pidOf(t testing.TB, m *remote.Manager, name string) int {
	t.Helper()
	st, ok := status(m, name)
	if !ok || st.PID == 0 {
		t.Fatalf("%s has no process (status %s)", name, describeStatus(st))
	}
	return st.PID
}

// call runs a tool through the pipeline as the test client.
func call(ctx context.Context, h *processHost, tool, args string) pipeline.Result {
	return h.tools.Execute(ctx, tool, json.RawMessage(args), conformance.Caller)
}

// ctl runs an operation of a test plugin's control tool (see
// internal/testkit/testplugin/control.go).
func ctl(ctx context.Context, h *processHost, tool string, op map[string]any) pipeline.Result {
	b, err := json.Marshal(op)
	if err != nil {
		panic(err)
	}
	return call(ctx, h, tool, string(b))
}

// valueOf is a result's value as compact JSON.
func valueOf(r pipeline.Result) string {
	switch v := r.Value.(type) {
	case nil:
		return ""
	case json.RawMessage:
		return string(v)
	default:
		b, _ := json.Marshal(v)
		return string(b)
	}
}

func describe(r pipeline.Result) string {
	if r.OK {
		return "ok " + valueOf(r)
	}
	if r.Error == nil {
		return "not ok, no error"
	}
	s := string(r.Error.Code) + " " + r.Error.Message
	if r.DecidedBy != "" {
		s += " (decided by " + r.DecidedBy + ")"
	}
	return s
}

func wantOK(t testing.TB, r pipeline.Result, want string) {
	t.Helper()
	if !r.OK {
		t.Fatalf("result = %s, want ok", describe(r))
	}
	if want != "" && valueOf(r) != want {
		t.Fatalf("value = %s, want %s", valueOf(r), want)
	}
}

func wantCode(t testing.TB, r pipeline.Result, code pipeline.Code, parts ...string) {
	t.Helper()
	if r.OK || r.Error == nil || r.Error.Code != code {
		t.Fatalf("result = %s, want %s", describe(r), code)
	}
	for _, p := range parts {
		if !strings.Contains(r.Error.Message, p) {
			t.Errorf("message %q does not contain %q", r.Error.Message, p)
		}
	}
}

// eventually polls cond until it holds or limit passes.
func eventually(t testing.TB, what string, limit time.Duration, cond func() bool) {
	t.Helper()
	if !testkit.Eventually(limit, cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}
