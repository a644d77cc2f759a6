package conformance

import (
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// 1. Register add from P: add {a:2,b:3} → ok, value 5. Unload P → add gives
// UNKNOWN_TOOL, and audit saw both calls.
func case01(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h, PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}})
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	host.Unload(t, "P")
	wantCode(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), pipeline.CodeUnknownTool, "no tool named add")
	wantAudit(t, host, "add ok", "add UNKNOWN_TOOL")
}

// 2. A second plugin registers add → its apply step fails naming P as the
// owner; P's add still works.
func case02(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h, PluginSpec{Name: "first", Tools: []ToolSpec{addTool("first")}})
	err := host.Load(t, PluginSpec{Name: "second", Tools: []ToolSpec{addTool("second")}})
	if err == nil {
		t.Fatal("a second plugin registered add without an error")
	}
	if !strings.Contains(err.Error(), "first") || !strings.Contains(err.Error(), "add") {
		t.Errorf("error %q does not name the tool add and its owner first", err)
	}
	if s, ok := host.Kernel().Scope("second"); ok && s.State() != kernel.Failed {
		t.Errorf("second is %v, want FAILED", s.State())
	}
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantLog(t, host, "first", "run", "done")
	wantLog(t, host, "second")
	if info, ok := host.Tools().Lookup("add"); !ok || info.Owner != "first" {
		t.Errorf("add is owned by %q (registered %v), want first", info.Owner, ok)
	}
}

// 3. Empty name, missing description, missing execute → registration error
// that names the field.
func case03(t *testing.T, h Harness) {
	for _, tc := range []struct {
		name  string
		tool  ToolSpec
		field string
	}{
		{"empty_name", ToolSpec{Name: "", Description: "Adds.", Body: BodyAdd}, "name"},
		{"missing_description", ToolSpec{Name: "add", Body: BodyAdd}, "description"},
		{"missing_execute", ToolSpec{Name: "add", Description: "Adds.", Body: BodyNone}, "execute"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := caseCtx(t)
			host := newHost(t, h)
			err := host.Load(t, PluginSpec{Name: "P", Tools: []ToolSpec{tc.tool}})
			if err == nil {
				t.Fatalf("registering a tool with no %s succeeded", tc.field)
			}
			// Case-insensitively: an SDK may name the field as its authors
			// write it ("Description is empty").
			if !strings.Contains(strings.ToLower(err.Error()), tc.field) {
				t.Errorf("error %q does not name the field %q", err, tc.field)
			}
			if got := host.Tools().List(); len(got) != 0 {
				t.Errorf("registry holds %d tools after the failed load", len(got))
			}
			wantCode(t, host.Execute(ctx, tc.tool.Name, `{"a":1,"b":2}`), pipeline.CodeUnknownTool)
		})
	}
}

// 4. add {a:"x"} with parameters requiring numbers → INVALID_ARGUMENTS
// naming the path /a; no stage-1 listener ran; audit saw it.
func case04(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("body")}},
		PluginSpec{Name: "watcher", Pre: []PreSpec{{Behaviour: PrePass, Log: "pre"}}},
	)
	wantCode(t, host.Execute(ctx, "add", `{"a":"x","b":3}`), pipeline.CodeInvalidArguments, "/a")
	wantLog(t, host, "pre")
	wantLog(t, host, "body")
	wantAudit(t, host, "add INVALID_ARGUMENTS")
}

// 5. nope {} → UNKNOWN_TOOL "no tool named nope"; audit saw it exactly once.
func case05(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "P", Tools: []ToolSpec{addTool("")}},
		PluginSpec{Name: "watcher", Pre: []PreSpec{{Behaviour: PrePass, Log: "pre"}}},
	)
	wantCode(t, host.Execute(ctx, "nope", `{}`), pipeline.CodeUnknownTool, "no tool named nope")
	wantLog(t, host, "pre")
	wantAudit(t, host, "nope UNKNOWN_TOOL")
}
