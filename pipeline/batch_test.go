package pipeline_test

import (
	"encoding/json"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// RegisterTools: each tool accepted or refused on its own, the replaced
// tools gone and the new ones there in one step, and a call running
// meanwhile sees one version of the list or the other, never a mix.
func TestRegisterToolsBatch(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	var reg *pipeline.Registrar
	load(t, k,
		fakePlugin{name: "B", apply: func(r *pipeline.Registrar) error { reg = r; return nil }}.plugin(),
		fakePlugin{name: "other", tools: []pipeline.Tool{tool("taken", okBody("other"))}}.plugin(),
	)
	version := func(v string) []pipeline.Tool {
		return []pipeline.Tool{tool("x", okBody(v)), tool("y", okBody(v))}
	}
	t.Run("refusals_are_per_tool", func(t *testing.T) {
		bad := pipeline.Tool{ToolDescriptor: wire.ToolDescriptor{Name: "bad", Description: "d", Parameters: json.RawMessage(`{"type":12}`)}, Execute: okBody(1)}
		effects, errs, err := reg.RegisterTools(nil, []pipeline.Tool{tool("ok", okBody(1)), bad, tool("taken", okBody("B"))})
		if err != nil {
			t.Fatal(err)
		}
		if errs == nil || errs[0] != nil || errs[1] == nil || errs[2] == nil {
			t.Fatalf("errs = %v", errs)
		}
		if !strings.Contains(errs[2].Error(), "other") {
			t.Errorf("taken: %v, want the owner named", errs[2])
		}
		if effects[0] == nil || effects[1] != nil || effects[2] != nil {
			t.Fatalf("effects = %v", effects)
		}
		if r := tools.Execute(ctx, "taken", nil, "test"); r.Value != "other" {
			t.Errorf("taken = %s, want other's", r.Value)
		}
		if err := effects[0].Undo(); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("replace_is_atomic", func(t *testing.T) {
		effects, errs, err := reg.RegisterTools(nil, version("1"))
		if err != nil || errs != nil {
			t.Fatal(err, errs)
		}
		var stop atomic.Bool
		var wg sync.WaitGroup
		var mixed atomic.Int64
		wg.Add(1)
		go func() {
			defer wg.Done()
			for !stop.Load() {
				// Two calls are two snapshots; List is one.
				seen := map[string]bool{}
				n := 0
				for _, info := range tools.List() {
					if info.Name == "x" || info.Name == "y" {
						seen[info.Description] = true
						n++
					}
				}
				if n != 2 {
					mixed.Add(1)
				}
			}
		}()
		for i := range 200 {
			v := "1"
			if i%2 == 0 {
				v = "2"
			}
			effects, errs, err = reg.RegisterTools(effects, version(v))
			if err != nil || errs != nil {
				t.Fatal(err, errs)
			}
		}
		stop.Store(true)
		wg.Wait()
		if mixed.Load() > 0 {
			t.Errorf("%d listings saw x and y not both registered", mixed.Load())
		}
		if r := tools.Execute(ctx, "x", nil, "test"); r.Value != "1" {
			t.Errorf("x = %+v, want the last version", r)
		}
	})
}

// A name reserved for a plugin (while it restarts) is refused to anyone
// else with its owner named, accepted from the owner, and free again once
// released; calls meanwhile fail with the reason.
func TestReservedToolName(t *testing.T) {
	ctx := testkit.Context(t)
	k, tools := newTools(t, pipeline.Options{})
	release := tools.Reserve("read_file", "files", "plugin files is restarting")
	var evil *pipeline.Registrar
	load(t, k, fakePlugin{name: "evil", apply: func(r *pipeline.Registrar) error { evil = r; return nil }}.plugin())
	if r := tools.Execute(ctx, "read_file", nil, "test"); r.Error == nil || r.Error.Code != pipeline.CodeToolError || !strings.Contains(r.Error.Message, "restarting") {
		t.Errorf("call while reserved = %+v", r)
	}
	for range 2 {
		_, err := evil.Register(tool("read_file", okBody("evil")))
		if err == nil || !strings.Contains(err.Error(), "belongs to plugin files") {
			t.Fatalf("evil's Register = %v, want refused naming files", err)
		}
		_, errs, err := evil.RegisterTools(nil, []pipeline.Tool{tool("read_file", okBody("evil"))})
		if err != nil || errs == nil || !strings.Contains(errs[0].Error(), "belongs to plugin files") {
			t.Fatalf("evil's RegisterTools = %v %v, want refused naming files", err, errs)
		}
	}
	if _, err := k.Load(fakePlugin{name: "files", tools: []pipeline.Tool{tool("read_file", okBody("files"))}}.plugin()); err != nil {
		t.Fatalf("the owner's registration: %v", err)
	}
	release()
	if r := tools.Execute(ctx, "read_file", nil, "test"); r.Value != "files" {
		t.Errorf("read_file = %+v, want files'", r)
	}
	if err := k.Unload("files"); err != nil {
		t.Fatal(err)
	}
	if _, err := evil.Register(tool("read_file", okBody("evil"))); err != nil {
		t.Errorf("after release and unload, the name is free: %v", err)
	}
}
