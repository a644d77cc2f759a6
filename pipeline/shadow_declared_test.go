package pipeline_test

import (
	"context"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// declaredFixture loads a tool "list" and a plugin "safety" whose guard
// "no-list" denies every call of it, registered by the plugin itself in
// shadow with a canary for group:canary when shadow is set, enforced
// otherwise.
func declaredFixture(t *testing.T, k *kernel.Kernel, shadow bool) {
	t.Helper()
	load(t, k, fakePlugin{name: "safety", apply: func(reg *pipeline.Registrar) error {
		start := func(ctx context.Context, e *pipeline.Execution) func() (string, error) {
			pipeline.NoteRule(ctx, "no-list")
			return func() (string, error) { return "denied by no-list", nil }
		}
		if shadow {
			_, err := reg.StartedGuardInShadow(start, "no-list", []string{"group:canary"}, "list")
			return err
		}
		_, err := reg.StartedGuardVisible(start, "list")
		return err
	}}.plugin())
}

// TestShadowDeclaredByPlugin: a guard a plugin registers in shadow is in
// shadow as a deployment's shadow block puts it (the call runs, its result
// and explain note what the rule would have done; the canary has it
// enforced), it hides the tool from nobody but the canary, it merges with
// the deployment's rules, and it ends with its registration.
func TestShadowDeclaredByPlugin(t *testing.T) {
	k, tools := newTools(t, pipeline.Options{})
	load(t, k, fakePlugin{name: "files", tools: []pipeline.Tool{tool("list", okBody("listed")), tool("write", okBody("written"))},
		apply: func(reg *pipeline.Registrar) error {
			_, err := reg.GuardVisible(func(ctx context.Context, e *pipeline.Execution) (string, error) {
				pipeline.NoteRule(ctx, "no-write")
				return "denied by no-write", nil
			}, "write")
			return err
		}}.plugin())
	declaredFixture(t, k, true)
	ctx := testkit.Context(t)
	bob := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "bob", Kind: "user"})
	ann := pipeline.WithPrincipal(ctx, pipeline.Principal{ID: "ann", Kind: "user", Attributes: []string{"group:canary"}})

	r := tools.Execute(bob, "list", []byte(`{}`), "test")
	if !r.OK || shadowsOf(r.Shadow) != "2:safety/no-list:DENIED" {
		t.Fatalf("bob's call: ok %v %+v, shadow %q", r.OK, r.Error, shadowsOf(r.Shadow))
	}
	if x := tools.Explain(bob, "list", []byte(`{}`), "test"); x.Outcome != pipeline.WouldRun || shadowsOf(x.Shadow) != "2:safety/no-list:DENIED" {
		t.Errorf("explain for bob: %s, shadow %q", x.Outcome, shadowsOf(x.Shadow))
	}
	r = tools.Execute(ann, "list", []byte(`{}`), "test")
	wantCode(t, r, pipeline.CodeDenied)
	if len(r.Shadow) != 0 || r.DecidedBy != "safety" {
		t.Errorf("the canary's call: decided by %q, shadow %q", r.DecidedBy, shadowsOf(r.Shadow))
	}
	// A rule in shadow hides nothing; enforced for the canary, it hides
	// the tool from it.
	if v := tools.Visible(bob, "list"); !v.Shown {
		t.Errorf("a rule in shadow hides list from bob: %s", v)
	}
	if !tools.VisibleSet(bob, pipeline.Principal{ID: "bob", Kind: "user"}).Has("list") {
		t.Error("list is not in bob's visible set")
	}
	if v := tools.Visible(ann, "list"); v.Shown {
		t.Errorf("the canary sees list: %s", v)
	}

	// With the deployment's shadow block (the files plugin's no-write),
	// both are in shadow; the visible set follows the change.
	if tools.VisibleSet(bob, pipeline.Principal{ID: "bob", Kind: "user"}).Has("write") {
		t.Fatal("write is shown to bob while no-write is enforced")
	}
	if err := tools.SetShadow([]pipeline.ShadowRule{{Plugin: "files", Rule: "no-write"}}); err != nil {
		t.Fatal(err)
	}
	if !tools.VisibleSet(bob, pipeline.Principal{ID: "bob", Kind: "user"}).Has("write") {
		t.Error("write is hidden from bob though no-write is in shadow")
	}
	r = tools.Execute(bob, "write", []byte(`{}`), "test")
	if !r.OK || shadowsOf(r.Shadow) != "2:files/no-write:DENIED" {
		t.Errorf("bob's write: ok %v, shadow %q", r.OK, shadowsOf(r.Shadow))
	}
	r = tools.Execute(bob, "list", []byte(`{}`), "test")
	if !r.OK || shadowsOf(r.Shadow) != "2:safety/no-list:DENIED" {
		t.Errorf("bob's list beside the deployment's rule: ok %v, shadow %q", r.OK, shadowsOf(r.Shadow))
	}

	// The plugin applied again with the rule enforced: no shadow left.
	if err := k.Unload("safety"); err != nil {
		t.Fatal(err)
	}
	declaredFixture(t, k, false)
	r = tools.Execute(bob, "list", []byte(`{}`), "test")
	wantCode(t, r, pipeline.CodeDenied)
	if len(r.Shadow) != 0 {
		t.Errorf("enforced again, shadow %q", shadowsOf(r.Shadow))
	}

	// A guard in shadow must be named.
	load(t, k, fakePlugin{name: "nameless", apply: func(reg *pipeline.Registrar) error {
		if _, err := reg.StartedGuardInShadow(func(context.Context, *pipeline.Execution) func() (string, error) { return nil }, "", nil); err == nil {
			t.Error("a nameless guard in shadow was registered")
		}
		return nil
	}}.plugin())
}
