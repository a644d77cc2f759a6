package mcpserver_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/shared/wire"
)

// offerings is an in-host plugin that offers resources and a prompt as
// entries of a kind, as the MCP bridge does for its servers, and denies
// reading or following x://secret.
func offerings() kernel.Plugin {
	uriOf := func(e *pipeline.Execution) string {
		var in struct{ URI string }
		_ = json.Unmarshal(e.Arguments(), &in)
		return in.URI
	}
	uriSchema := json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string"}},"required":["uri"]}`)
	return kernel.Plugin{
		Name:   "lib",
		Inject: []string{pipeline.ServiceName},
		Apply: func(ctx context.Context, s *kernel.Scope) error {
			reg, err := pipeline.RegistrarOf(s)
			if err != nil {
				return err
			}
			for _, t := range []pipeline.Tool{
				{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "lib_resources.list", Kind: "resources", Description: "Lists.",
					},
					Execute: func(context.Context, *pipeline.Execution) (any, error) {
						return json.RawMessage(`{"resources":[{"uri":"x://a","name":"a"}],"resourceTemplates":[{"uriTemplate":"x://t/{id}","name":"t"}]}`), nil
					},
				},
				{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "lib_resources.read", Kind: "resource", Description: "Reads.", Parameters: uriSchema,
					},
					Execute: func(_ context.Context, e *pipeline.Execution) (any, error) {
						return map[string]any{"contents": []map[string]string{{"uri": uriOf(e), "text": "text of " + uriOf(e)}}}, nil
					},
				},
				{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "lib_resources.subscribe", Kind: "resource_subscribe", Description: "Subscribes.", Parameters: uriSchema,
					},
					Execute: func(context.Context, *pipeline.Execution) (any, error) {
						return map[string]any{}, nil
					},
				},
				{
					ToolDescriptor: wire.ToolDescriptor{
						Name: "lib_prompts.hi", Kind: "prompt", Description: "Says hi.", Parameters: json.RawMessage(`{"type":"object","properties":{"who":{"type":"string","description":"whom"}},"required":["who"]}`),
					},
					Execute: func(_ context.Context, e *pipeline.Execution) (any, error) {
						var in struct{ Who string }
						_ = json.Unmarshal(e.Arguments(), &in)
						return map[string]any{"messages": []any{map[string]any{"role": "user", "content": map[string]string{"type": "text", "text": "hi " + in.Who}}}}, nil
					},
				},
			} {
				if _, err := reg.Register(t); err != nil {
					return err
				}
			}
			_, err = reg.OnPreExecute(func(ctx context.Context, e *pipeline.Execution, next pipeline.DecideNext) (pipeline.Decision, error) {
				if k := e.Tool().Kind; (k == "resource" || k == "resource_subscribe") && uriOf(e) == "x://secret" {
					return pipeline.Deny("x://secret is off limits"), nil
				}
				return next(ctx), nil
			})
			return err
		},
	}
}

func TestResourcesAndPrompts(t *testing.T) {
	for _, version := range []string{"2025-11-25", "2026-07-28"} {
		t.Run(version, func(t *testing.T) {
			leakCheck(t)
			f := newFixture(t, 5*time.Second)
			if _, err := f.h.Kernel().Load(offerings()); err != nil {
				t.Fatal(err)
			}
			ctx := testkit.Context(t)
			updated := make(chan string, 4)
			c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, &mcp.ClientOptions{
				ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) { updated <- req.Params.URI },
			})
			cs := connectStdio(t, ctx, f.srv, c, version)
			modern := version >= "2026-07-28"

			lr, err := cs.ListResources(ctx, nil)
			if err != nil || len(lr.Resources) != 1 || lr.Resources[0].URI != "plugkit://lib/x://a" {
				t.Fatalf("resources/list: %v %+v", err, lr)
			}
			if modern && (lr.CacheScope != "private" || lr.TTLMs <= 0) {
				t.Errorf("resources/list cache hint: %q %d", lr.CacheScope, lr.TTLMs)
			}
			lt, err := cs.ListResourceTemplates(ctx, nil)
			if err != nil || len(lt.ResourceTemplates) != 1 || lt.ResourceTemplates[0].URITemplate != "plugkit://lib/x://t/{id}" {
				t.Fatalf("resources/templates/list: %v %+v", err, lt)
			}
			rr, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "plugkit://lib/x://t/5"})
			if err != nil || len(rr.Contents) != 1 || rr.Contents[0].Text != "text of x://t/5" || rr.Contents[0].URI != "plugkit://lib/x://t/5" {
				t.Fatalf("resources/read: %v %+v", err, rr)
			}
			if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "plugkit://lib/x://secret"}); err == nil || !strings.Contains(err.Error(), "DENIED: x://secret is off limits") {
				t.Errorf("read of x://secret: %v, want DENIED", err)
			}
			for _, bad := range []string{"x://a", "plugkit://lib", "plugkit://nobody/x://a"} {
				if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: bad}); err == nil || !strings.Contains(err.Error(), "not found") {
					t.Errorf("read of %s: %v, want not found", bad, err)
				}
			}

			if !modern {
				// A 2026-07-28 client subscribes on a stream whose refusal
				// its Subscribe does not wait for.
				if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "plugkit://lib/x://secret"}); err == nil || !strings.Contains(err.Error(), "DENIED") {
					t.Errorf("subscribe to x://secret: %v, want DENIED", err)
				}
			}
			if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "plugkit://lib/x://a"}); err != nil {
				t.Fatal(err)
			}
			f.audit.waitFor(t, "lib_resources.subscribe")
			// What a plugin process reports through Host.ResourceUpdated.
			deadline := time.After(10 * time.Second)
		wait:
			for {
				f.h.Kernel().Events().Emit(ctx, host.EventResourceUpdated, host.ResourceUpdate{Plugin: "lib", URI: "x://a"})
				select {
				case got := <-updated:
					if got != "plugkit://lib/x://a" {
						t.Fatalf("updated %s", got)
					}
					break wait
				case <-time.After(100 * time.Millisecond):
					// A 2026-07-28 subscription is acknowledged on its
					// stream before the server records it.
				case <-deadline:
					t.Fatal("no notifications/resources/updated")
				}
			}

			lp, err := cs.ListPrompts(ctx, nil)
			if err != nil || len(lp.Prompts) != 1 || lp.Prompts[0].Name != "lib_prompts.hi" || len(lp.Prompts[0].Arguments) != 1 || !lp.Prompts[0].Arguments[0].Required {
				raw, _ := json.Marshal(lp)
				t.Fatalf("prompts/list: %v %s", err, raw)
			}
			gp, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "lib_prompts.hi", Arguments: map[string]string{"who": "bob"}})
			if err != nil || len(gp.Messages) != 1 || gp.Messages[0].Content.(*mcp.TextContent).Text != "hi bob" {
				t.Fatalf("prompts/get: %v %+v", err, gp)
			}
			if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "lib_prompts.hi"}); err == nil || !strings.Contains(err.Error(), "INVALID_ARGUMENTS") {
				t.Errorf("prompts/get without who: %v", err)
			}

			lt2, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(lt2.Tools, func(tool *mcp.Tool) bool { return strings.HasPrefix(tool.Name, "lib_") }) {
				t.Errorf("tools/list serves the entries: %v", lt2.Tools)
			}
			for _, tool := range []string{"lib_resources.list", "lib_resources.read", "lib_prompts.hi"} {
				if r := f.audit.waitFor(t, tool); r.Caller == "" || !strings.HasPrefix(r.Caller, "mcp#") {
					t.Errorf("%s recorded for caller %q, want the session", tool, r.Caller)
				}
			}
		})
	}
}
