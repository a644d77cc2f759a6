package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// TestOfferingsVisibility: a bridge's resources and a prompt hidden from
// support (a rule denying it every read of the bridge and every get of the
// prompt) are not in support's resources/list, resources/templates/list or
// prompts/list, while eng lists them; and support's read, subscription and
// get of them get exactly the answers of a bridge and a prompt that do not
// exist, names aside.
func TestOfferingsVisibility(t *testing.T) {
	leakCheck(t)
	f, cs, _ := keyClients(t, "eng", "support")
	if _, err := f.h.Kernel().Load(offerings()); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Kernel().Load(hideFrom("rules", "group:support", "lib_resources.read", "lib_prompts.hi")); err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	waitPrompt(t, ctx, cs["eng"])
	type listed struct{ resources, templates, prompts int }
	list := func(who string) listed {
		t.Helper()
		lr, err := cs[who].ListResources(ctx, nil)
		if err != nil {
			t.Fatalf("resources/list as %s: %v", who, err)
		}
		lt, err := cs[who].ListResourceTemplates(ctx, nil)
		if err != nil {
			t.Fatalf("resources/templates/list as %s: %v", who, err)
		}
		lp, err := cs[who].ListPrompts(ctx, nil)
		if err != nil {
			t.Fatalf("prompts/list as %s: %v", who, err)
		}
		return listed{len(lr.Resources), len(lt.ResourceTemplates), len(lp.Prompts)}
	}
	if got := list("eng"); got != (listed{1, 1, 1}) {
		t.Errorf("eng lists %+v, want a resource, a template and a prompt", got)
	}
	if got := list("support"); got != (listed{}) {
		t.Errorf("support lists %+v, want nothing", got)
	}

	// A hidden offering and a missing one: the same answer, names aside.
	answer := func(err error, name string) string {
		t.Helper()
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			t.Fatalf("%s: %v, want a protocol error", name, err)
		}
		b, _ := json.Marshal(je)
		return strings.ReplaceAll(string(b), name, "NAME")
	}
	read := func(uri string) string {
		_, err := cs["support"].ReadResource(ctx, &mcp.ReadResourceParams{URI: uri})
		return answer(err, uri)
	}
	if hidden, missing := read("plugkit://lib/x://a"), read("plugkit://nobody/x://a"); hidden != missing || !strings.Contains(hidden, "not found") {
		t.Errorf("support's read of a hidden resource:\n%s\nof a missing one:\n%s", hidden, missing)
	}
	subscribe := func(uri string) string {
		return answer(cs["support"].Subscribe(ctx, &mcp.SubscribeParams{URI: uri}), uri)
	}
	if hidden, missing := subscribe("plugkit://lib/x://a"), subscribe("plugkit://nobody/x://a"); hidden != missing {
		t.Errorf("support's subscription to a hidden resource:\n%s\nto a missing one:\n%s", hidden, missing)
	}
	get := func(name string) string {
		_, err := cs["support"].GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: map[string]string{"who": "bob"}})
		return answer(err, name)
	}
	if hidden, missing := get("lib_prompts.hi"), get("lib_prompts.nope"); hidden != missing || !strings.Contains(hidden, "unknown prompt") {
		t.Errorf("support's get of a hidden prompt:\n%s\nof a missing one:\n%s", hidden, missing)
	}

	// eng reads and gets them.
	if rr, err := cs["eng"].ReadResource(ctx, &mcp.ReadResourceParams{URI: "plugkit://lib/x://a"}); err != nil || len(rr.Contents) != 1 {
		t.Errorf("eng's read: %v %+v", err, rr)
	}
	if _, err := cs["eng"].GetPrompt(ctx, &mcp.GetPromptParams{Name: "lib_prompts.hi", Arguments: map[string]string{"who": "bob"}}); err != nil {
		t.Errorf("eng's get: %v", err)
	}
}

// TestPromptVisibilityIsNoToolChange: a rule that hides a prompt from
// support changes what support is shown, but not its tools: the
// tools/list_changed that a rule hiding a tool from eng makes at the same
// time reaches eng and not support; a rule that then hides a tool from
// support tells support, once.
func TestPromptVisibilityIsNoToolChange(t *testing.T) {
	leakCheck(t)
	f, cs, changed := keyClients(t, "eng", "support")
	if _, err := f.h.Kernel().Load(offerings()); err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	for _, who := range []string{"eng", "support"} {
		// Listed after the entries came: each view is of the entries too.
		listNames(t, cs[who])
	}
	changed.setPhase(1)
	if _, err := f.h.Kernel().Load(hideFrom("prompt-rules", "group:support", "lib_prompts.hi")); err != nil {
		t.Fatal(err)
	}
	if _, err := f.h.Kernel().Load(hideFrom("eng-rules", "group:eng", "echo")); err != nil {
		t.Fatal(err)
	}
	changed.waitFor(t, ctx, "eng", 1)
	if lp, err := cs["support"].ListPrompts(ctx, nil); err != nil || len(lp.Prompts) != 0 {
		t.Fatalf("support's prompts/list after the rule: %v %+v", err, lp)
	}
	changed.setPhase(2)
	if _, err := f.h.Kernel().Load(hideFrom("tool-rules", "group:support", "echo")); err != nil {
		t.Fatal(err)
	}
	changed.waitFor(t, ctx, "support", 2)
	// Phase 1's notification, had it reached support, would have come
	// first (in phase 1 or 2): support has exactly one.
	if sup := changed.of("support"); len(sup) != 1 || sup[0] != 2 {
		t.Fatalf("support's tools/list_changed by phase: %v, want [2]", sup)
	}
}

// TestPromptListChangedPerSession: a rule that hides a prompt from support
// sends prompts/list_changed to support's session and not to eng's; one
// that then hides it from eng tells eng.
func TestPromptListChangedPerSession(t *testing.T) {
	leakCheck(t)
	f, cs, changed := keyClients(t, "eng", "support")
	if _, err := f.h.Kernel().Load(offerings()); err != nil {
		t.Fatal(err)
	}
	ctx := testkit.Context(t)
	prompts := func(who string) int {
		t.Helper()
		lp, err := cs[who].ListPrompts(ctx, nil)
		if err != nil {
			t.Fatalf("prompts/list as %s: %v", who, err)
		}
		return len(lp.Prompts)
	}
	waitPrompt(t, ctx, cs["eng"])
	if prompts("eng") != 1 || prompts("support") != 1 {
		t.Fatal("both should list lib_prompts.hi")
	}
	changed.setPhase(1)
	if _, err := f.h.Kernel().Load(hideFrom("support-rules", "group:support", "lib_prompts.hi")); err != nil {
		t.Fatal(err)
	}
	changed.waitFor(t, ctx, "support prompts", 1)
	if prompts("support") != 0 || prompts("eng") != 1 {
		t.Fatal("support still lists the prompt, or eng no longer does")
	}
	changed.setPhase(2)
	if _, err := f.h.Kernel().Load(hideFrom("eng-rules", "group:eng", "lib_prompts.hi")); err != nil {
		t.Fatal(err)
	}
	changed.waitFor(t, ctx, "eng prompts", 2)
	// A session's notifications arrive in order: had phase 1's reached
	// eng, it would have come before phase 2's. (Phase 0's, of the
	// prompt's coming, may reach a session that had not listed yet.)
	if eng := slices.DeleteFunc(changed.of("eng prompts"), func(p int) bool { return p == 0 }); len(eng) != 1 || eng[0] != 2 {
		t.Fatalf("eng's prompts/list_changed by phase: %v, want [2]", eng)
	}
}

// waitPrompt waits until the session lists a prompt: the front end adds the
// registry's prompts to the SDK after the registration, in its own loop.
func waitPrompt(t *testing.T, ctx context.Context, cs *mcp.ClientSession) {
	t.Helper()
	for {
		lp, err := cs.ListPrompts(ctx, nil)
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		if len(lp.Prompts) > 0 {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatal("no prompt listed")
		case <-time.After(10 * time.Millisecond):
		}
	}
}
