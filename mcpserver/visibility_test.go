package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/authn"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/mcpserver"
	"github.com/plugkit-go/plugkit/pipeline"
)

// hideFrom is a plugin whose guard answers the visibility question: it
// denies every call of tools made for a principal that selector names.
func hideFrom(name, selector string, tools ...string) kernel.Plugin {
	return kernel.Plugin{Name: name, Inject: []string{pipeline.ServiceName}, Apply: func(ctx context.Context, s *kernel.Scope) error {
		reg, err := pipeline.RegistrarOf(s)
		if err != nil {
			return err
		}
		_, err = reg.GuardVisible(func(ctx context.Context, e *pipeline.Execution) (string, error) {
			if e.Principal().Matches(selector) {
				return e.Name() + " is not for " + selector, nil
			}
			return "", nil
		}, tools...)
		return err
	}}
}

// notes records, for each session, the phase of the test in which each of
// its tools/list_changed notifications arrived.
type notes struct {
	mu    sync.Mutex
	phase int
	by    map[string][]int
	got   chan struct{}
}

func (n *notes) setPhase(p int) {
	n.mu.Lock()
	n.phase = p
	n.mu.Unlock()
}

func (n *notes) note(who string) {
	n.mu.Lock()
	n.by[who] = append(n.by[who], n.phase)
	n.mu.Unlock()
	n.got <- struct{}{}
}

// waitFor waits until who has a notification of phase p.
func (n *notes) waitFor(t *testing.T, ctx context.Context, who string, p int) {
	t.Helper()
	for {
		n.mu.Lock()
		ok := slices.Contains(n.by[who], p)
		n.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-n.got:
		case <-ctx.Done():
			t.Fatalf("%s got no tools/list_changed notification in phase %d", who, p)
		}
	}
}

func (n *notes) of(who string) []int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return slices.Clone(n.by[who])
}

// keyClients starts an HTTP endpoint of f that authenticates API keys and
// returns a client session for each of the groups, noting their
// tools/list_changed notifications (as GROUP) and prompts/list_changed
// ones (as "GROUP prompts").
func keyClients(t *testing.T, groups ...string) (*fixture, map[string]*mcp.ClientSession, *notes) {
	return keyClientsWith(t, mcpserver.Options{}, groups...)
}

// keyClientsWith is keyClients with the server's options (Authenticate is
// the keys').
func keyClientsWith(t *testing.T, opts mcpserver.Options, groups ...string) (*fixture, map[string]*mcp.ClientSession, *notes) {
	keysFile := filepath.Join(t.TempDir(), "keys.hcl")
	secrets := map[string]string{}
	for _, g := range groups {
		k, err := authn.NewKey(keysFile, g, "agent", []string{"group:" + g})
		if err != nil {
			t.Fatal(err)
		}
		secrets[g] = k
	}
	keys, diags := authn.LoadKeys(keysFile)
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	a, err := authn.New(context.Background(), authn.Config{Keys: keys})
	if err != nil {
		t.Fatal(err)
	}
	opts.Authenticate = a.Require
	f := newFixtureWith(t, 5*time.Second, opts)
	endpoint := serveHTTP(t, f.srv)
	sessions, n := map[string]*mcp.ClientSession{}, &notes{by: map[string][]int{}, got: make(chan struct{}, 64)}
	for _, g := range groups {
		c := mcp.NewClient(&mcp.Implementation{Name: g, Version: "test"}, &mcp.ClientOptions{
			ToolListChangedHandler:   func(context.Context, *mcp.ToolListChangedRequest) { n.note(g) },
			PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { n.note(g + " prompts") },
		})
		hc := &http.Client{Transport: withKey{secrets[g], http.DefaultTransport}}
		// Sessions (2025-11-25): a 2026-07-28 client has none, and learns
		// of a change of its list from the list's cache hint instead.
		cs, err := c.Connect(testkit.Context(t), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatalf("connect as %s: %v", g, err)
		}
		t.Cleanup(func() { _ = cs.Close() })
		sessions[g] = cs
	}
	return f, sessions, n
}

func listNames(t *testing.T, cs *mcp.ClientSession) ([]string, string) {
	t.Helper()
	res, err := cs.ListTools(testkit.Context(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tl := range res.Tools {
		names = append(names, tl.Name)
	}
	slices.Sort(names)
	return names, res.CacheScope
}

// TestVisibilityPerSession: each key's tools/list holds exactly the tools
// shown to its principal, marked private; a call of a hidden tool is
// answered as one of a tool that does not exist; a rule that hides one
// more tool from support tells support's session, and not eng's.
func TestVisibilityPerSession(t *testing.T) {
	leakCheck(t)
	f, cs, changed := keyClients(t, "eng", "support")
	if _, err := f.h.Kernel().Load(hideFrom("rules", "group:support", "delete", "add")); err != nil {
		t.Fatal(err)
	}
	eng, scope := listNames(t, cs["eng"])
	if want := []string{"add", "delete", "echo", "secret", "wait"}; !slices.Equal(eng, want) || scope != "private" {
		t.Fatalf("eng lists %v (cacheScope %q), want %v, private", eng, scope, want)
	}
	sup, scope := listNames(t, cs["support"])
	if want := []string{"echo", "secret", "wait"}; !slices.Equal(sup, want) || scope != "private" {
		t.Fatalf("support lists %v (cacheScope %q), want %v, private", sup, scope, want)
	}

	// A hidden tool and a missing one: the same answer, names and ids aside.
	call := func(name string) string {
		_, err := cs["support"].CallTool(testkit.Context(t), &mcp.CallToolParams{Name: name, Arguments: map[string]any{"a": 1, "b": 2}})
		var je *jsonrpc.Error
		if !errors.As(err, &je) {
			t.Fatalf("call %s: %v, want a protocol error", name, err)
		}
		b, _ := json.Marshal(je)
		s := strings.ReplaceAll(string(b), name, "NAME")
		return regexp.MustCompile(`"plugkit/id":"[^"]*"`).ReplaceAllString(s, `"plugkit/id":"ID"`)
	}
	hidden, missing := call("add"), call("no_such_tool")
	if hidden != missing || !strings.Contains(hidden, "UNKNOWN_TOOL") && !strings.Contains(hidden, "no tool named NAME") {
		t.Fatalf("hidden tool: %s\nmissing tool: %s", hidden, missing)
	}
	if r := f.audit.waitFor(t, "add"); r.Code != pipeline.CodeUnknownTool {
		t.Fatalf("the audit saw the hidden call as %s, want UNKNOWN_TOOL", r.Code)
	}
	// eng calls it.
	if res, err := cs["eng"].CallTool(testkit.Context(t), &mcp.CallToolParams{Name: "add", Arguments: map[string]any{"a": 1, "b": 2}}); err != nil || res.IsError {
		t.Fatalf("eng's call of add: %v %+v", err, res)
	}

	// Phase 1, a rule hiding echo from support: support is told, eng is
	// not. Phase 2, one hiding secret from eng: eng is told, support is
	// not. Phase 3, a new tool both see: both are told. Notifications reach
	// a session in order, so once phase 3's has, every earlier one has.
	ctx := testkit.Context(t)
	changed.setPhase(1)
	if _, err := f.h.Kernel().Load(hideFrom("more-rules", "group:support", "echo")); err != nil {
		t.Fatal(err)
	}
	changed.waitFor(t, ctx, "support", 1)
	if sup, _ := listNames(t, cs["support"]); !slices.Equal(sup, []string{"secret", "wait"}) {
		t.Fatalf("support lists %v after the new rule", sup)
	}
	changed.setPhase(2)
	if _, err := f.h.Kernel().Load(hideFrom("eng-rules", "group:eng", "secret")); err != nil {
		t.Fatal(err)
	}
	changed.waitFor(t, ctx, "eng", 2)
	if eng, _ := listNames(t, cs["eng"]); !slices.Equal(eng, []string{"add", "delete", "echo", "wait"}) {
		t.Fatalf("eng lists %v after its rule", eng)
	}
	changed.setPhase(3)
	f.demo.mu.Lock()
	f.demo.extra = true
	f.demo.mu.Unlock()
	if err := f.h.Kernel().Reload("demo"); err != nil {
		t.Fatal(err)
	}
	changed.waitFor(t, ctx, "eng", 3)
	changed.waitFor(t, ctx, "support", 3)
	if eng, sup := changed.of("eng"), changed.of("support"); !slices.Equal(eng, []int{2, 3}) || !slices.Equal(sup, []int{1, 3}) {
		t.Fatalf("notifications by phase: eng %v, support %v; want [2 3] and [1 3]", eng, sup)
	}
}
