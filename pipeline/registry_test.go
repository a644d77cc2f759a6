package pipeline_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

func TestRegisterRefuses(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tools []pipeline.Tool
		says  []string
	}{
		{"every_missing_field_named", []pipeline.Tool{{}}, []string{"name is required", "description is required", "execute is required"}},
		{"parameters_not_json", []pipeline.Tool{{ToolDescriptor: wire.ToolDescriptor{Name: "t", Description: "d", Parameters: json.RawMessage(`{`)}, Execute: okBody(1)}}, []string{`"t"`, "parameters are not valid JSON"}},
		{"parameters_not_a_schema", []pipeline.Tool{{ToolDescriptor: wire.ToolDescriptor{Name: "t", Description: "d", Parameters: json.RawMessage(`{"type":12}`)}, Execute: okBody(1)}}, []string{`"t"`, "not a valid JSON Schema"}},
		{"duplicate_in_one_plugin", []pipeline.Tool{addTool(), addTool()}, []string{`"add"`, "P"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := testkit.Context(t)
			k, tools := newTools(t, pipeline.Options{})
			_, err := k.Load(fakePlugin{name: "P", tools: tc.tools}.plugin())
			if err == nil {
				t.Fatal("the registration succeeded")
			}
			for _, s := range tc.says {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			if n := len(tools.List()); n != 0 {
				t.Errorf("%d tools registered after the failed load", n)
			}
			wantCode(t, tools.Execute(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), "c"), pipeline.CodeUnknownTool)
		})
	}
}

// A tool's name follows the MCP character set; within it, a name with '.'
// or '-' is not read as a URL, even though the schema compiler wants one.
func TestToolNamesFollowTheMCPCharacterSet(t *testing.T) {
	for _, name := range []string{"a.b", "x-y", "..x", "files.read_file", "A9"} {
		t.Run(name, func(t *testing.T) {
			ctx := testkit.Context(t)
			k, tools := newTools(t, pipeline.Options{})
			load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{{
				ToolDescriptor: wire.ToolDescriptor{
					Name: name, Description: "d", Parameters: json.RawMessage(addSchema),
				},
				Execute: addBody,
			}}}.plugin())
			r := tools.Execute(ctx, name, json.RawMessage(`{"a":1,"b":2}`), "c")
			wantCode(t, r, "")
			wantCode(t, tools.Execute(ctx, name, json.RawMessage(`{"a":"x","b":2}`), "c"), pipeline.CodeInvalidArguments)
		})
	}
	for _, name := range []string{"my tool", "a/b", "#x", "?q=1", "%zz", "é", "..", "tool:other", "../x", "t\x00", strings.Repeat("a", 129)} {
		t.Run("refused "+name[:min(len(name), 20)], func(t *testing.T) {
			k, tools := newTools(t, pipeline.Options{})
			_, err := k.Load(fakePlugin{name: "P", tools: []pipeline.Tool{{
				ToolDescriptor: wire.ToolDescriptor{
					Name: name, Description: "d",
				},
				Execute: addBody,
			}}}.plugin())
			if err == nil || !strings.Contains(err.Error(), "MCP tool name rule") {
				t.Fatalf("registering %q: %v, want the name refused", name, err)
			}
			if n := len(tools.List()); n != 0 {
				t.Fatalf("%d tools registered", n)
			}
		})
	}
}

// A name that differs from a served one only by case or by characters that
// look alike is refused, whoever registers it and whichever batch it is
// in; a held tool is exempt (it is never served).
func TestLookalikeToolNamesAreRefused(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{{ToolDescriptor: wire.ToolDescriptor{Name: "read_file", Description: "d"}, Execute: okBody(1)}}}.plugin())
	for _, name := range []string{"READ_FILE", "Read_file", "read_fiIe", "read_fi1e", "Read_FiIe"} {
		_, err := k.Load(fakePlugin{name: "Q" + name, tools: []pipeline.Tool{{ToolDescriptor: wire.ToolDescriptor{Name: name, Description: "d"}, Execute: okBody(2)}}}.plugin())
		if err == nil || !strings.Contains(err.Error(), `looks like the tool "read_file" (of plugin P)`) {
			t.Errorf("registering %q beside read_file: %v, want it refused as a lookalike", name, err)
		}
	}
	_, err := k.Load(fakePlugin{name: "R", tools: []pipeline.Tool{
		{ToolDescriptor: wire.ToolDescriptor{Name: "t0ol", Description: "d"}, Execute: okBody(3)},
		{ToolDescriptor: wire.ToolDescriptor{Name: "tool", Description: "d"}, Execute: okBody(3)},
	}}.plugin())
	if err == nil || !strings.Contains(err.Error(), `register tool "tool": it looks like the tool "t0ol" (of plugin R)`) {
		t.Errorf("a batch with two lookalikes: %v, want the second refused", err)
	}
	load(t, k, fakePlugin{name: "H", tools: []pipeline.Tool{{ToolDescriptor: wire.ToolDescriptor{Name: "READ_FILE", Description: "d", Held: "a lookalike"}, Execute: okBody(4)}}}.plugin())
	names := []string{}
	for _, ti := range tools.List() {
		names = append(names, ti.Name)
	}
	if want := []string{"READ_FILE", "read_file"}; !slices.Equal(names, want) {
		t.Errorf("tools %v, want %v", names, want)
	}
}

func TestListAndLookup(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	if got := tools.List(); len(got) != 0 {
		t.Fatalf("a fresh registry lists %v", got)
	}
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{
			{ToolDescriptor: wire.ToolDescriptor{Name: "zeta", Description: "Last.", ReadOnly: true}, Execute: okBody(1)},
			{ToolDescriptor: wire.ToolDescriptor{Name: "alpha", Description: "First.", Parameters: json.RawMessage(addSchema), Destructive: true, Idempotent: true, Timeout: time.Second}, Execute: addBody},
		}}.plugin(),
		fakePlugin{name: "Q", tools: []pipeline.Tool{tool("mid", okBody(1))}}.plugin(),
	)
	list := tools.List()
	names := make([]string, len(list))
	for i, ti := range list {
		names[i] = ti.Name
	}
	if want := []string{"alpha", "mid", "zeta"}; !slices.Equal(names, want) {
		t.Errorf("List = %v, want %v", names, want)
	}
	alpha, ok := tools.Lookup("alpha")
	if !ok {
		t.Fatal("Lookup(alpha) found nothing")
	}
	if alpha.Owner != "P" || alpha.Description != "First." || !alpha.Destructive || !alpha.Idempotent || alpha.ReadOnly || alpha.Timeout != time.Second {
		t.Errorf("alpha = %+v", alpha)
	}
	if string(alpha.Parameters) != addSchema {
		t.Errorf("alpha's parameters = %s", alpha.Parameters)
	}
	zeta, _ := tools.Lookup("zeta")
	if !zeta.ReadOnly || string(zeta.Parameters) != `{"type":"object"}` {
		t.Errorf("zeta = %+v, want read-only with the default schema", zeta)
	}
	if _, ok := tools.Lookup("nope"); ok {
		t.Error("Lookup(nope) found a tool")
	}

	// What List and Lookup return is a copy.
	list[0].Name = "changed"
	alpha.Parameters[0] = 'X'
	if again, _ := tools.Lookup("alpha"); again.Name != "alpha" || string(again.Parameters) != addSchema {
		t.Errorf("changing a returned descriptor changed the registry: %+v", again)
	}

	if err := k.Unload("P"); err != nil {
		t.Fatal(err)
	}
	if got := tools.List(); len(got) != 1 || got[0].Name != "mid" {
		t.Errorf("after unloading P, List = %v", got)
	}
}

// A Registrar kept past its plugin's scope registers nothing.
func TestRegistrarAfterScopeEnds(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	var kept *pipeline.Registrar
	load(t, k, fakePlugin{name: "P", apply: func(reg *pipeline.Registrar) error { kept = reg; return nil }}.plugin())
	if err := k.Unload("P"); err != nil {
		t.Fatal(err)
	}
	if _, err := kept.Register(addTool()); !errors.Is(err, kernel.ErrScopeEnded) {
		t.Errorf("Register after unload: err = %v, want ErrScopeEnded", err)
	}
	if _, err := kept.Guard(func(context.Context, *pipeline.Execution) (string, error) { return "no", nil }); !errors.Is(err, kernel.ErrScopeEnded) {
		t.Errorf("Guard after unload: err = %v, want ErrScopeEnded", err)
	}
	if _, ok := tools.Lookup("add"); ok {
		t.Error("add was registered by an ended scope")
	}
	load(t, k, fakePlugin{name: "Q", tools: []pipeline.Tool{addTool()}}.plugin())
	wantCode(t, tools.Execute(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), "c"), "")
}

// A plugin calling a tool through its Registrar is the caller, and its call
// passes every stage.
func TestRegistrarExecute(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	rec := &recorder{}
	var caller *pipeline.Registrar
	var preSaw string
	load(t, k,
		rec.plugin(),
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
		fakePlugin{name: "policy",
			pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				preSaw = e.Caller()
				return next(ctx), nil
			},
			guard: func(ctx context.Context, e *pipeline.Execution) (string, error) {
				var in addArgs
				_ = e.Decode(&in)
				if in.A > 100 {
					return "a is over 100", nil
				}
				return "", nil
			},
		}.plugin(),
		fakePlugin{name: "agent", apply: func(reg *pipeline.Registrar) error { caller = reg; return nil }}.plugin(),
	)
	if caller.Tools() != tools {
		t.Error("Registrar.Tools is not the service")
	}
	wantCode(t, caller.Execute(ctx, "add", json.RawMessage(`{"a":1,"b":2}`)), "")
	if preSaw != "agent" {
		t.Errorf("stage 1 saw caller %q, want agent", preSaw)
	}
	r := caller.Execute(ctx, "add", json.RawMessage(`{"a":101,"b":2}`))
	wantCode(t, r, pipeline.CodeDenied)
	if r.DecidedBy != "policy" {
		t.Errorf("decided by %q, want policy", r.DecidedBy)
	}
	seen := rec.all()
	if len(seen) != 2 || seen[0].caller != "agent" || seen[1].caller != "agent" {
		t.Errorf("stage 5 saw %+v, want two calls by agent", seen)
	}
	wantCode(t, tools.Execute(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), "client"), "")
	if seen := rec.all(); seen[2].caller != "client" {
		t.Errorf("a client call has caller %q", seen[2].caller)
	}
}

// A call in flight keeps the pipeline it started with; the next call sees
// the change.
func TestSnapshotInFlight(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	entered := make(chan struct{})
	release := make(chan struct{})
	var once bool
	load(t, k,
		fakePlugin{name: "P", tools: []pipeline.Tool{addTool()}}.plugin(),
		fakePlugin{name: "gate", pre: func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
			if !once {
				once = true
				close(entered)
				select {
				case <-release:
				case <-ctx.Done():
				}
			}
			return next(ctx), nil
		}}.plugin(),
	)
	done := make(chan pipeline.Result, 1)
	go func() { done <- tools.Execute(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), "client") }()
	recv(t, ctx, entered)
	load(t, k, fakePlugin{name: "wall", guard: func(context.Context, *pipeline.Execution) (string, error) { return "walled", nil }}.plugin())
	close(release)
	wantCode(t, recv(t, ctx, done), "")
	wantCode(t, tools.Execute(ctx, "add", json.RawMessage(`{"a":1,"b":2}`), "client"), pipeline.CodeDenied)
}

func TestMarkAbsent(t *testing.T) {
	ctx := testkit.Context(t)
	_, tools := newTools(t, pipeline.Options{})
	release := tools.MarkAbsent("add", "plugin p is restarting")
	r := tools.Execute(ctx, "add", json.RawMessage(`{}`), "c")
	wantCode(t, r, pipeline.CodeToolError)
	if r.Error.Message != "plugin p is restarting" {
		t.Fatalf("absent tool: %+v", r.Error)
	}
	release()
	release()
	wantCode(t, tools.Execute(ctx, "add", json.RawMessage(`{}`), "c"), pipeline.CodeUnknownTool)
}

// A description longer than MaxDescriptionBytes holds its tool absent: it
// is listed with the reason and its description cut to the bound, and a
// call to it is refused; one at the bound is served.
func TestLongDescriptionIsHeld(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{MaxDescriptionBytes: 10})
	load(t, k, fakePlugin{name: "P", tools: []pipeline.Tool{
		{ToolDescriptor: wire.ToolDescriptor{Name: "long", Description: "ééééééé"}, Execute: okBody(1)}, // 14 bytes
		{ToolDescriptor: wire.ToolDescriptor{Name: "fits", Description: "0123456789"}, Execute: okBody(2)},
	}}.plugin())
	long, ok := tools.Lookup("long")
	if !ok || !strings.Contains(long.Held, "the description is 14 bytes, over the max_description_bytes limit of 10") || long.Description != "ééééé" {
		t.Fatalf("long: %+v, want it held, its description cut at a character", long)
	}
	r := tools.Execute(ctx, "long", json.RawMessage(`{}`), "c")
	wantCode(t, r, pipeline.CodeUnknownTool)
	if !strings.Contains(r.Error.Message, "max_description_bytes") {
		t.Errorf("the refusal does not say why: %s", r.Error.Message)
	}
	wantCode(t, tools.Execute(ctx, "fits", json.RawMessage(`{}`), "c"), "")
}
