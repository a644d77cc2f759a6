package pipeline_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/identity"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// TestVisibleOnlyAbsentIsUnknown: a tool hidden from a principal stays a
// tool that does not exist for it while its plugin is restarting or
// failed (its name reserved, marked absent): the same code, message,
// decider and observed call as a call of a missing tool, where a principal
// it is shown to (or a call without WithVisibleOnly) is told why it is
// missing. The tool is hidden by what it is (destructive), not by its
// name, so the answer must come from the tool as it was registered.
func TestVisibleOnlyAbsentIsUnknown(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	var rec recorder
	load(t, k, rec.plugin(),
		kernel.Plugin{Name: "rules", Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, _ := pipeline.RegistrarOf(s)
			_, err := reg.GuardVisible(func(ctx context.Context, e *pipeline.Execution) (string, error) {
				if e.Tool() != nil && e.Tool().Destructive && e.Principal().Matches("group:support") {
					return "support may not destroy", nil
				}
				return "", nil
			})
			return err
		}},
	)
	const why = "plugin toolbox is restarting: its process exited (exit status 2)"
	release := tools.ReserveTool(pipeline.ToolInfo{ToolDescriptor: wire.ToolDescriptor{Name: "wipe", Owner: "toolbox", Destructive: true}}, why)
	defer release()

	support := identity.Principal{ID: "s", Kind: "agent", Attributes: []string{"group:support"}}
	eng := identity.Principal{ID: "e", Kind: "agent", Attributes: []string{"group:eng"}}
	as := func(p identity.Principal) context.Context {
		return pipeline.WithVisibleOnly(pipeline.WithPrincipal(testkit.Context(t), p))
	}
	hidden := tools.Execute(as(support), "wipe", json.RawMessage(`{"a":1}`), "c")
	unknown := tools.Execute(as(support), "nope", json.RawMessage(`{"a":1}`), "c")
	norm := func(r pipeline.Result, name string) string {
		msg := ""
		if r.Error != nil {
			msg = strings.ReplaceAll(r.Error.Message, name, "NAME")
		}
		return fmt.Sprintf("%v %s %q %q", r.OK, r.Code(), msg, r.DecidedBy)
	}
	if a, b := norm(hidden, "wipe"), norm(unknown, "nope"); a != b || hidden.Code() != pipeline.CodeUnknownTool {
		t.Fatalf("support's call of a hidden absent tool: %s\nof a missing one: %s", a, b)
	}
	seen := rec.all()
	if len(seen) != 2 || seen[0].args != seen[1].args || norm(seen[0].result, "wipe") != norm(seen[1].result, "nope") {
		t.Fatalf("observers saw %+v", seen)
	}
	for _, c := range []struct {
		name string
		ctx  context.Context
	}{
		{"eng, to whom it is shown", as(eng)},
		{"support without WithVisibleOnly", pipeline.WithPrincipal(testkit.Context(t), support)},
	} {
		r := tools.Execute(c.ctx, "wipe", json.RawMessage(`{}`), "c")
		if r.Code() != pipeline.CodeToolError || r.Error.Message != why {
			t.Errorf("%s: %s %+v, want TOOL_ERROR %q", c.name, r.Code(), r.Error, why)
		}
	}
	// Its visibility, asked outright, is that of the tool as registered.
	if v := tools.Visible(pipeline.WithPrincipal(testkit.Context(t), support), "wipe"); v.Shown || v.DecidedBy != "rules" {
		t.Errorf("Visible(wipe) for support while absent: %+v, want hidden by rules", v)
	}
	release()
	if a, b := norm(tools.Execute(as(eng), "wipe", json.RawMessage(`{}`), "c"), "wipe"), norm(unknown, "nope"); a != b {
		t.Errorf("eng's call once released: %s, want %s", a, b)
	}
}

// TestVisibleSetEqualToolsAndPrompts: a rule that hides a prompt entry
// changes a principal's visible set, not the tools it lists
// (EqualTools), and changes its prompts (EqualPrompts); one that hides a
// tool changes its tools and not its prompts.
func TestVisibleSetEqualToolsAndPrompts(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	load(t, k, fakePlugin{name: "toolbox", tools: []pipeline.Tool{
		tool("a", okBody(1)),
		{ToolDescriptor: wire.ToolDescriptor{Name: "p_prompts.hi", Kind: pipeline.KindPrompt, Description: "A prompt."}, Execute: okBody(1)},
	}}.plugin())
	ctx := testkit.Context(t)
	support := identity.Principal{ID: "s", Kind: "agent", Attributes: []string{"group:support"}}
	hide := func(name string, tools ...string) kernel.Plugin {
		return kernel.Plugin{Name: name, Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, _ := pipeline.RegistrarOf(s)
			_, err := reg.GuardVisible(func(ctx context.Context, e *pipeline.Execution) (string, error) {
				if e.Principal().Matches("group:support") {
					return "not for support", nil
				}
				return "", nil
			}, tools...)
			return err
		}}
	}
	before := tools.VisibleSet(ctx, support)
	load(t, k, hide("prompt-rules", "p_prompts.hi"))
	noPrompt := tools.VisibleSet(ctx, support)
	if noPrompt.Equal(before) || !noPrompt.EqualTools(before) || noPrompt.EqualPrompts(before) {
		t.Fatalf("a prompt hidden: Equal %v EqualTools %v EqualPrompts %v, want false true false",
			noPrompt.Equal(before), noPrompt.EqualTools(before), noPrompt.EqualPrompts(before))
	}
	load(t, k, hide("tool-rules", "a"))
	noTool := tools.VisibleSet(ctx, support)
	if noTool.EqualTools(noPrompt) || !noTool.EqualPrompts(noPrompt) {
		t.Fatalf("a tool hidden: EqualTools %v EqualPrompts %v, want false true", noTool.EqualTools(noPrompt), noTool.EqualPrompts(noPrompt))
	}
}
