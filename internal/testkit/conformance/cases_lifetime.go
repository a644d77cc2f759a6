package conformance

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/pipeline/policy"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// safety is a plugin whose guard denies the path "/".
func safety(name string) PluginSpec {
	return PluginSpec{Name: name, Guards: []GuardSpec{{Behaviour: GuardDenyWhenEqual, Field: "path", Value: "/", Reason: "refusing to touch /"}}}
}

// deleteTool echoes its path.
func deleteTool() ToolSpec {
	return ToolSpec{Name: "delete", Description: "Deletes a path.", Parameters: pathSchema, Destructive: true, Body: BodyEcho}
}

// 40. Tools add and delete, safety guard denying path "/" → delete /tmp/x
// ok, delete / denied, add unaffected.
func case40(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{Name: "files", Tools: []ToolSpec{addTool(""), deleteTool()}},
		safety("safety"),
	)
	wantOK(t, host.Execute(ctx, "delete", `{"path":"/tmp/x"}`), `{"path":"/tmp/x"}`)
	wantDenied(t, host.Execute(ctx, "delete", `{"path":"/"}`), "safety", "refusing to touch /")
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
}

// 41. A tool registered after safety, audit and the timeout policy are
// loaded is guarded, audited and timed.
func case41(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h, safety("safety"))
	loadPolicy(t, host, policy.Timeout())
	mustLoad(t, host, PluginSpec{Name: "late", Tools: []ToolSpec{{
		Name: "late", Description: "Sleeps on a path.", Parameters: pathSchema,
		Timeout: 20 * time.Millisecond, Body: BodySleep, Sleep: time.Second, Log: "late",
	}}})
	wantDenied(t, host.Execute(ctx, "late", `{"path":"/"}`), "safety", "refusing to touch /")
	wantCode(t, host.Execute(ctx, "late", `{"path":"/tmp"}`), pipeline.CodeToolTimeout, "late exceeded 20ms")
	wantAudit(t, host, "late DENIED", "late TOOL_TIMEOUT")
	waitLog(t, host, "late", "cancelled")
}

// 42. A plugin that injects index stays PENDING until index is provided;
// when the provider unloads it goes back to PENDING and its tools are gone;
// when a provider returns it loads again. Kernel-level: the plugins are
// in-host whatever the harness.
func case42(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h)
	k := host.Kernel()
	consumer := kernel.Plugin{
		Name:   "search",
		Inject: []string{pipeline.ServiceName, "index"},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			idx, err := s.Service("index")
			if err != nil {
				return err
			}
			_, err = reg.Register(pipeline.Tool{
				ToolDescriptor: wire.ToolDescriptor{
					Name: "search", Description: "Searches the index.",
				},
				Execute: func(context.Context, *pipeline.Execution) (any, error) { return idx, nil },
			})
			return err
		},
	}
	provider := func(name, value string) kernel.Plugin {
		return kernel.Plugin{Name: name, Apply: func(ctx context.Context, s *kernel.Scope) error {
			_, err := s.Provide("index", value)
			return err
		}}
	}
	wantState := func(want kernel.State) {
		t.Helper()
		s, ok := k.Scope("search")
		if !ok {
			t.Fatal("the kernel does not know search")
		}
		if got := s.State(); got != want {
			t.Fatalf("search is %v, want %v", got, want)
		}
	}

	if _, err := k.Load(consumer); err != nil {
		t.Fatalf("load search: %v", err)
	}
	wantState(kernel.Pending)
	wantCode(t, host.Execute(ctx, "search", `{}`), pipeline.CodeUnknownTool)

	if _, err := k.Load(provider("index-v1", "v1")); err != nil {
		t.Fatalf("load index-v1: %v", err)
	}
	wantState(kernel.Active)
	wantOK(t, host.Execute(ctx, "search", `{}`), `"v1"`)

	host.Unload(t, "index-v1")
	wantState(kernel.Pending)
	wantCode(t, host.Execute(ctx, "search", `{}`), pipeline.CodeUnknownTool)
	if _, ok := host.Tools().Lookup("search"); ok {
		t.Error("search is still registered while its plugin is pending")
	}

	// A new provider: the consumer is rebuilt, so it sees the new value.
	if _, err := k.Load(provider("index-v2", "v2")); err != nil {
		t.Fatalf("load index-v2: %v", err)
	}
	wantState(kernel.Active)
	wantOK(t, host.Execute(ctx, "search", `{}`), `"v2"`)
}

// 43. (remote) Kill -9 a plugin process: all its tools, guards and
// listeners are gone within 100ms; nothing of other plugins changed.
func case43(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	host := newHost(t, h,
		PluginSpec{
			Name:      "victim",
			Tools:     []ToolSpec{{Name: "victim_tool", Description: "Echoes.", Body: BodyEcho}},
			Pre:       []PreSpec{{Behaviour: PrePass, Log: "victim_pre"}},
			Guards:    []GuardSpec{{Behaviour: GuardDenyWhenGreater, Field: "a", Limit: 100, Reason: "victim says a is over 100"}},
			Post:      []PostSpec{{Behaviour: PostPass, Log: "victim_post"}},
			Observers: []ObserverSpec{{Behaviour: ObserveRecord, Log: "victim_obs"}},
		},
		PluginSpec{
			Name:   "other",
			Tools:  []ToolSpec{addTool("")},
			Guards: []GuardSpec{{Behaviour: GuardDenyWhenGreater, Field: "a", Limit: 1000, Reason: "other says a is over 1000"}},
			Post:   []PostSpec{{Behaviour: PostPass, Log: "other_post"}},
		},
	)
	kill := killer(t, host)
	wantDenied(t, host.Execute(ctx, "add", `{"a":999,"b":1}`), "victim")
	before := host.Tools().List()

	start := time.Now()
	kill.Kill(t, "victim")
	waitFor(t, "victim's effects to be undone", func() bool {
		_, ok := host.Tools().Lookup("victim_tool")
		s, known := host.Kernel().Scope("victim")
		return !ok && (!known || s.State() != kernel.Active)
	})
	// SPEC's target is 100ms; a loaded machine may take longer, so the
	// figure is reported rather than asserted.
	t.Logf("victim's effects were undone %v after the kill (target 100ms)", time.Since(start))

	wantOK(t, host.Execute(ctx, "add", `{"a":999,"b":1}`), "1000")
	wantDenied(t, host.Execute(ctx, "add", `{"a":5000,"b":1}`), "other", "other says a is over 1000")
	wantGone(t, host.Execute(ctx, "victim_tool", `{}`))
	after := host.Tools().List()
	want := slices.DeleteFunc(before, func(ti pipeline.ToolInfo) bool { return ti.Owner == "victim" })
	if !slices.EqualFunc(after, want, func(a, b pipeline.ToolInfo) bool { return a.Name == b.Name && a.Owner == b.Owner }) {
		t.Errorf("tools after the kill = %v, want %v", after, want)
	}
	// Of the calls since the kill, only the first reached stage 4.
	wantLog(t, host, "other_post", "called")
}

// 44. (remote) A critical guard plugin is killed: every call is DENIED
// naming it until it is ACTIVE again; then the calls its rule allows
// succeed.
func case44(t *testing.T, h Harness) {
	ctx := caseCtx(t)
	guard := safety("safety")
	guard.Critical = true
	host := newHost(t, h,
		PluginSpec{Name: "files", Tools: []ToolSpec{addTool(""), deleteTool()}},
		guard,
	)
	kill := killer(t, host)
	wantOK(t, host.Execute(ctx, "delete", `{"path":"/tmp/x"}`), "")
	kill.Kill(t, "safety")
	for _, c := range []struct{ tool, args string }{
		{"delete", `{"path":"/tmp/x"}`},
		{"add", `{"a":2,"b":3}`},
		{"delete", `{"path":"/"}`},
	} {
		r := host.Execute(ctx, c.tool, c.args)
		wantCode(t, r, pipeline.CodeDenied)
		if !strings.Contains(r.Error.Message, "safety") && r.DecidedBy != "safety" {
			t.Errorf("%s %s: the denial %s does not name safety", c.tool, c.args, describe(r))
		}
	}
	kill.Restart(t, "safety")
	wantOK(t, host.Execute(ctx, "delete", `{"path":"/tmp/x"}`), "")
	wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
	wantDenied(t, host.Execute(ctx, "delete", `{"path":"/"}`), "safety", "refusing to touch /")
}

// 45. Effects undo in reverse order; an undo that fails does not stop the
// others; undoing twice runs once. Kernel-level, with in-host plugins.
func case45(t *testing.T, h Harness) {
	t.Run("reverse_order_past_failures", func(t *testing.T) {
		ctx := caseCtx(t)
		host := newHost(t, h)
		var mu sync.Mutex
		var undone []string
		track := func(s *kernel.Scope, name string, fail func() error) error {
			_, err := s.Track(name, func() error {
				mu.Lock()
				undone = append(undone, name)
				mu.Unlock()
				return fail()
			})
			return err
		}
		ok := func() error { return nil }
		_, err := host.Kernel().Load(kernel.Plugin{
			Name:   "P",
			Inject: []string{pipeline.ServiceName},
			Apply: func(ctx context.Context, s *kernel.Scope) error {
				reg, err := pipeline.RegistrarOf(s)
				if err != nil {
					return err
				}
				return errors.Join(
					track(s, "first", ok),
					second(reg),
					track(s, "failing", func() error { return errors.New("undo fails") }),
					track(s, "panicking", func() error { panic("undo panics") }),
					track(s, "last", ok),
				)
			},
		})
		if err != nil {
			t.Fatalf("load P: %v", err)
		}
		wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")
		host.Unload(t, "P")
		if want := []string{"last", "panicking", "failing", "first"}; !slices.Equal(undone, want) {
			t.Errorf("undo order = %q, want %q", undone, want)
		}
		wantCode(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), pipeline.CodeUnknownTool)
	})

	t.Run("undo_twice_runs_once", func(t *testing.T) {
		ctx := caseCtx(t)
		host := newHost(t, h)
		var runs int
		var custom, tool *kernel.Effect
		var reg *pipeline.Registrar
		_, err := host.Kernel().Load(kernel.Plugin{
			Name:   "P",
			Inject: []string{pipeline.ServiceName},
			Apply: func(ctx context.Context, s *kernel.Scope) (err error) {
				if reg, err = pipeline.RegistrarOf(s); err != nil {
					return err
				}
				if custom, err = s.Track("custom", func() error { runs++; return nil }); err != nil {
					return err
				}
				tool, err = reg.Register(addToolGo())
				return err
			},
		})
		if err != nil {
			t.Fatalf("load P: %v", err)
		}
		for range 2 {
			if err := custom.Undo(); err != nil {
				t.Errorf("undo: %v", err)
			}
		}
		if runs != 1 {
			t.Errorf("the undo ran %d times, want once", runs)
		}

		// Undoing a tool's registration twice must not remove the tool that
		// was registered again under the same name in between.
		if err := tool.Undo(); err != nil {
			t.Fatalf("undo the tool: %v", err)
		}
		wantCode(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), pipeline.CodeUnknownTool)
		if _, err := reg.Register(addToolGo()); err != nil {
			t.Fatalf("register add again: %v", err)
		}
		if err := tool.Undo(); err != nil {
			t.Errorf("second undo: %v", err)
		}
		wantOK(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), "5")

		host.Unload(t, "P")
		if runs != 1 {
			t.Errorf("after unload the undo has run %d times, want once", runs)
		}
		wantCode(t, host.Execute(ctx, "add", `{"a":2,"b":3}`), pipeline.CodeUnknownTool)
	})
}

// second registers the add tool: a pipeline effect between custom ones.
func second(reg *pipeline.Registrar) error {
	_, err := reg.Register(addToolGo())
	return err
}

// addToolGo is the add tool as a Go value, for the kernel-level cases.
func addToolGo() pipeline.Tool {
	return pipeline.Tool{
		ToolDescriptor: wire.ToolDescriptor{
			Name: "add", Description: "Adds a and b.",
		},
		Execute: func(ctx context.Context, e *pipeline.Execution) (any, error) {
			var in struct{ A, B float64 }
			err := e.Decode(&in)
			return in.A + in.B, err
		},
	}
}
