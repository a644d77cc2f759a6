package conformance

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/pipeline"
)

// Bounds for waiting. None of them is a performance claim: they only stop a
// broken case from hanging, and are generous for a loaded 2-core machine.
const (
	// caseTimeout bounds every case's calls.
	caseTimeout = 30 * time.Second
	// promptly is how soon something "prompt" must have happened.
	promptly = 2 * time.Second
	// fastEnough is the bound for "long before the slow path would end":
	// well under the 1s a timed-out body sleeps.
	fastEnough = 500 * time.Millisecond
)

// addSchema requires two numbers.
const addSchema = `{"type":"object","properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"]}`

// pathSchema requires a path string.
const pathSchema = `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}`

// addTool is the fixture's add tool, logging to log.
func addTool(log string) ToolSpec {
	return ToolSpec{Name: "add", Description: "Adds a and b.", Parameters: addSchema, Body: BodyAdd, Log: log}
}

// slowTool sleeps d, under timeout when it is not zero.
func slowTool(name string, timeout, d time.Duration, log string) ToolSpec {
	return ToolSpec{Name: name, Description: "Sleeps.", Timeout: timeout, Body: BodySleep, Sleep: d, Log: log}
}

// caseCtx is the context of a case's calls.
func caseCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(t.Context(), caseTimeout)
	t.Cleanup(cancel)
	return ctx
}

// newHost returns a host with the given plugins loaded, failing t when one
// does not load.
func newHost(t *testing.T, h Harness, plugins ...PluginSpec) Host {
	t.Helper()
	return newHostWith(t, h, Config{}, plugins...)
}

func newHostWith(t *testing.T, h Harness, cfg Config, plugins ...PluginSpec) Host {
	t.Helper()
	host := h.New(t, cfg)
	for _, p := range plugins {
		mustLoad(t, host, p)
	}
	return host
}

func mustLoad(t *testing.T, host Host, p PluginSpec) {
	t.Helper()
	if err := host.Load(t, p); err != nil {
		t.Fatalf("load %s: %v", p.Name, err)
	}
}

// valueJSON is a result's value as compact JSON, whatever its Go form.
func valueJSON(t *testing.T, v any) string {
	t.Helper()
	var raw []byte
	switch v := v.(type) {
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	default:
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatalf("value %#v is not JSON: %v", v, err)
		}
		raw = b
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		t.Fatalf("value %s is not JSON: %v", raw, err)
	}
	return buf.String()
}

// wantOK checks that r succeeded with the value whose JSON is want ("" for
// any value).
func wantOK(t *testing.T, r pipeline.Result, want string) {
	t.Helper()
	if !r.OK || r.Error != nil {
		t.Fatalf("result = %s, want ok", describe(r))
	}
	if want != "" {
		if got := valueJSON(t, r.Value); got != want {
			t.Fatalf("value = %s, want %s", got, want)
		}
	}
}

// wantCode checks that r failed with code and that its message contains
// each of parts.
func wantCode(t *testing.T, r pipeline.Result, code pipeline.Code, parts ...string) {
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

// wantDenied checks a DENIED decided by who, whose message contains parts.
func wantDenied(t *testing.T, r pipeline.Result, who string, parts ...string) {
	t.Helper()
	wantCode(t, r, pipeline.CodeDenied, parts...)
	if who != "" && r.DecidedBy != who {
		t.Errorf("decided by %q, want %q", r.DecidedBy, who)
	}
}

func describe(r pipeline.Result) string {
	if r.OK {
		b, _ := json.Marshal(r.Value)
		return "ok " + string(b)
	}
	if r.Error == nil {
		return "not ok, no error"
	}
	s := string(r.Error.Code) + " " + quote(r.Error.Message)
	if r.DecidedBy != "" {
		s += " (decided by " + r.DecidedBy + ")"
	}
	return s
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// wantLog checks a log's entries.
func wantLog(t *testing.T, host Host, name string, want ...string) {
	t.Helper()
	if got := host.Log(name); !slices.Equal(got, want) {
		t.Errorf("log %q = %q, want %q", name, got, want)
	}
}

// waitLog waits until the named log holds entry.
func waitLog(t *testing.T, host Host, name, entry string) {
	t.Helper()
	waitFor(t, "log "+name+" to hold "+quote(entry), func() bool {
		return slices.Contains(host.Log(name), entry)
	})
}

// waitFor polls cond until it holds, failing t after ten times promptly: it
// is for asynchronous effects whose timing the case does not assert.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !eventually(cond) {
		t.Fatalf("timed out waiting for %s", what)
	}
}

// eventually polls cond for up to ten times promptly and says whether it
// came to hold.
func eventually(cond func() bool) bool {
	deadline := time.Now().Add(10 * promptly)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(2 * time.Millisecond)
	}
	return true
}

// audited reduces audit records to "tool ok" / "tool CODE" strings.
func audited(recs []AuditRecord) []string {
	out := make([]string, len(recs))
	for i, r := range recs {
		out[i] = r.Tool + " " + auditOutcome(r)
	}
	return out
}

func auditOutcome(r AuditRecord) string {
	if r.OK {
		return "ok"
	}
	return string(r.Code)
}

func wantAudit(t *testing.T, host Host, want ...string) {
	t.Helper()
	if got := audited(host.Audit()); !slices.Equal(got, want) {
		t.Errorf("audit = %q, want %q", got, want)
	}
}

// callAsync runs a call in a goroutine; the returned channel yields its
// result.
func callAsync(ctx context.Context, host Host, tool, args string) <-chan pipeline.Result {
	ch := make(chan pipeline.Result, 1)
	go func() { ch <- host.Execute(ctx, tool, args) }()
	return ch
}

// await returns the result of an async call, failing t if it does not come
// within limit.
func await(t *testing.T, ch <-chan pipeline.Result, limit time.Duration) pipeline.Result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(limit):
		t.Fatalf("the call did not return within %v", limit)
		return pipeline.Result{}
	}
}

// killer returns the host's Killer, skipping the case when it has none.
func killer(t *testing.T, host Host) Killer {
	t.Helper()
	k, ok := host.(Killer)
	if !ok {
		t.Skipf("remote-only case: this harness's Host does not implement conformance.Killer (its plugins have no process to kill)")
	}
	return k
}

// wantGone checks a call to a tool whose plugin's process was killed: a
// supervisor that restarts the plugin says so while it is down (TOOL_ERROR
// naming the restart, never "no tool named"); one that does not leaves no
// such tool (UNKNOWN_TOOL). It returns the code.
func wantGone(t *testing.T, r pipeline.Result) pipeline.Code {
	t.Helper()
	if r.Error != nil && r.Error.Code == pipeline.CodeToolError {
		if !strings.Contains(r.Error.Message, "restarting") {
			t.Fatalf("a call while the plugin is down: %+v, want UNKNOWN_TOOL or a TOOL_ERROR saying it is restarting", r.Error)
		}
		return pipeline.CodeToolError
	}
	wantCode(t, r, pipeline.CodeUnknownTool)
	return pipeline.CodeUnknownTool
}
