package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// A bridged server's resources and prompts are offered to the host as
// entries of the tool registry with a kind (sdk.Tool.Kind), so that reading
// a resource or getting a prompt is a call through the five stages like a
// tool call: stage 0 checks the arguments, rules and guards see the URI or
// the prompt's name and arguments, the secrets scanner reads what comes
// back, the audit records it. The host never serves these entries as tools.
//
//   - PREFIX_resources.list (kind "resources"): the server's resources and
//     resource templates, with the server's own URIs;
//   - PREFIX_resources.read (kind "resource"): reads one, arguments
//     {"uri": the server's own URI};
//   - PREFIX_resources.subscribe (kind "resource_subscribe"), when the
//     server takes subscriptions: subscribes to one, arguments {"uri"};
//     the server's notifications/resources/updated go to the host
//     (sdk.Context.ResourceUpdated), which tells the subscribed clients;
//   - PREFIX_prompts.NAME (kind "prompt"), one per prompt: gets it, the
//     prompt's arguments as the call's (all strings). Its definition is
//     pinned by host lock under the key "prompt:NAME".
//
// PREFIX is the tools' prefix. The front end maps URIs so that two servers'
// URIs never collide (mcpserver/resources.go).

const (
	kindResources = sdk.KindResources
	kindResource  = sdk.KindResource
	kindPrompt    = sdk.KindPrompt
	kindSubscribe = sdk.KindResourceSubscribe

	resourcesListName = "resources.list"
	resourcesReadName = "resources.read"
	resourcesSubName  = "resources.subscribe"
	promptNamePrefix  = "prompts."
	// promptPinPrefix keys a prompt's pin, apart from the tools' pins.
	promptPinPrefix = "prompt:"
	// entryKey marks the keys of these entries in the bridge's tool map: no
	// server tool name starts with NUL, so none can take their place.
	entryKey = "\x00"
)

// offerings adds to want the entries for the server's resources (when it
// declares the capability) and prompts (listed now). When prompts/list
// fails, want has the resource entries and no prompt.
func (b *bridge) offerings(ctx context.Context, want map[string]sdk.Tool) error {
	init := b.cs.InitializeResult()
	if init == nil || init.Capabilities == nil {
		return nil
	}
	caps := init.Capabilities
	if caps.Resources != nil {
		// Listed now for their pins and checks (resourcepins.go); a list
		// that fails leaves the entry without pins, and each list
		// checks again.
		var checked *resourceCheck
		if l, err := b.listResources(ctx); err != nil {
			b.log.Warn("resources not listed at registration: their definitions are checked at each list, and host lock cannot pin them until a list works", "server", b.set.describe(), "error", err)
		} else {
			c := b.checkResources(l)
			checked = &c
			b.mu.Lock()
			b.resourcesHeld = c.held
			b.mu.Unlock()
			for key, why := range c.held {
				b.log.Warn("resource held absent", "resource", key, "reason", why)
			}
		}
		want[entryKey+resourcesListName] = b.resourcesListEntry(caps.Resources, checked)
		want[entryKey+resourcesReadName] = b.resourcesReadEntry()
		if caps.Resources.Subscribe {
			want[entryKey+resourcesSubName] = b.resourcesSubscribeEntry()
		}
	}
	if caps.Prompts == nil {
		return nil
	}
	n := 0
	prompts := map[string]sdk.Tool{}
	for p, err := range b.cs.Prompts(ctx, nil) {
		if err != nil {
			err = b.set.limits.timedOut("prompts/list", err)
			return fmt.Errorf("prompts/list of the MCP server %s: %w", b.set.describe(), err)
		}
		if n++; n > b.set.limits.maxTools {
			return fmt.Errorf("prompts/list of the MCP server %s: %w", b.set.describe(), b.set.limits.tooManyTools())
		}
		key := entryKey + promptNamePrefix + p.Name
		if _, ok := prompts[key]; ok {
			prompts[key] = holdTool(prompts[key], p.Name, "the server listed this prompt more than once in prompts/list; which definition it means is unknown")
			continue
		}
		prompts[key] = b.promptEntry(ctx, p)
	}
	maps.Copy(want, prompts)
	return nil
}

func (b *bridge) resourcesListEntry(caps *mcp.ResourceCapabilities, checked *resourceCheck) sdk.Tool {
	var notes []string
	if checked != nil {
		notes = checked.notes
	}
	return sdk.Tool{
		Name:        b.set.toolName(resourcesListName),
		OwnerPrefix: b.set.ownerPrefix,
		Kind:        kindResources,
		Description: fmt.Sprintf("Lists the resources and resource templates of the MCP server %s.", b.set.describe()),
		Parameters:  `{"type":"object","properties":{},"additionalProperties":false}`,
		ReadOnly:    true,
		Idempotent:  true,
		Timeout:     b.set.timeout,
		// Subscriptions ride on the definition so that the front end knows
		// whether to pass them on.
		// The pins of the resources follow (resourcepins.go).
		Definition: listDefinition(fmt.Sprintf("resources subscribe=%t", caps.Subscribe), checked),
		Notes:      notes,
		Execute: func(ctx context.Context, _ *sdk.Call) (any, error) {
			return b.upstream(ctx, "resources/list", func(ctx context.Context) (any, error) { return b.checkedResources(ctx) })
		},
	}
}

func (b *bridge) resourcesReadEntry() sdk.Tool {
	return sdk.Tool{
		Name:        b.set.toolName(resourcesReadName),
		OwnerPrefix: b.set.ownerPrefix,
		Kind:        kindResource,
		Description: fmt.Sprintf("Reads a resource of the MCP server %s by its URI.", b.set.describe()),
		Parameters:  `{"type":"object","properties":{"uri":{"type":"string","minLength":1}},"required":["uri"],"additionalProperties":false}`,
		ReadOnly:    true,
		Idempotent:  true,
		Timeout:     b.set.timeout,
		Execute: func(ctx context.Context, call *sdk.Call) (any, error) {
			var args struct {
				URI string `json:"uri"`
			}
			if err := call.Bind(&args); err != nil {
				return nil, err
			}
			if why := b.heldRead(args.URI); why != "" {
				return nil, errors.New(why)
			}
			return b.upstream(ctx, "resources/read", func(ctx context.Context) (any, error) {
				res, err := b.cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: args.URI})
				if err != nil {
					return nil, fmt.Errorf("resources/read %s on the MCP server %s: %w", args.URI, b.set.describe(), err)
				}
				return resourceContents{Contents: res.Contents}, nil
			})
		},
	}
}

// resourceContents is what a read returns through the pipeline: the
// contents alone, without the server's _meta or cache hints (the host
// gives its own).
type resourceContents struct {
	Contents []*mcp.ResourceContents `json:"contents"`
}

// resourceList is what the list entry returns.
type resourceList struct {
	Resources []*mcp.Resource         `json:"resources"`
	Templates []*mcp.ResourceTemplate `json:"resourceTemplates"`
}

// listResources pages through resources/list and resources/templates/list,
// at most max_tools of each.
func (b *bridge) listResources(ctx context.Context) (*resourceList, error) {
	out := &resourceList{Resources: []*mcp.Resource{}, Templates: []*mcp.ResourceTemplate{}}
	for r, err := range b.cs.Resources(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("resources/list of the MCP server %s: %w", b.set.describe(), err)
		}
		if len(out.Resources) >= b.set.limits.maxTools {
			return nil, fmt.Errorf("resources/list of the MCP server %s: more than %d resources (max_tools)", b.set.describe(), b.set.limits.maxTools)
		}
		out.Resources = append(out.Resources, r)
	}
	for t, err := range b.cs.ResourceTemplates(ctx, nil) {
		if err != nil {
			var wire *jsonrpc.Error
			if errors.As(err, &wire) && wire.Code == jsonrpc.CodeMethodNotFound {
				break // a server with resources but no templates
			}
			return nil, fmt.Errorf("resources/templates/list of the MCP server %s: %w", b.set.describe(), err)
		}
		if len(out.Templates) >= b.set.limits.maxTools {
			return nil, fmt.Errorf("resources/templates/list of the MCP server %s: more than %d templates (max_tools)", b.set.describe(), b.set.limits.maxTools)
		}
		out.Templates = append(out.Templates, t)
	}
	return out, nil
}

// promptEntry is the entry of one prompt. Its definition (title,
// description, arguments and, for a prompt that needs no argument, its
// messages) is pinned and checked as a tool's is.
func (b *bridge) promptEntry(ctx context.Context, p *mcp.Prompt) sdk.Tool {
	props := map[string]any{}
	required := []string{}
	var held []string
	for _, a := range p.Arguments {
		prop := map[string]any{"type": "string"}
		if a.Description != "" {
			prop["description"] = a.Description
		}
		props[a.Name] = prop
		if a.Required {
			required = append(required, a.Name)
		}
	}
	params, _ := json.Marshal(map[string]any{"type": "object", "properties": props, "required": required, "additionalProperties": false})
	// The text of a prompt that takes no argument is known now, and is as
	// much an injection vector as a description: it is pinned and checked.
	var text string
	var messages any
	if len(required) == 0 {
		res, err := b.getPrompt(ctx, p.Name, nil)
		if err != nil {
			held = append(held, "prompts/get to check its text failed: "+err.Error())
		} else {
			messages = res.Messages
			text = promptText(res)
		}
	}
	def := promptDefinition(p, messages)
	flags := scanTool(&mcp.Tool{Name: p.Name, Title: p.Title, Description: p.Description + "\n" + text})
	var notes []string
	for _, f := range flags {
		notes = append(notes, f.String())
	}
	if len(flags) > 0 && b.set.trust.block {
		held = append(held, fmt.Sprintf("description failed the check %s (descriptions = \"block\")", flags[0].rule))
	}
	if why := b.set.trust.pinHeld(promptPinPrefix+p.Name, def); why != "" {
		held = append(held, why)
	}
	desc := p.Description
	if strings.TrimSpace(desc) == "" {
		desc = p.Title
	}
	if strings.TrimSpace(desc) == "" {
		desc = fmt.Sprintf("The prompt %s of the MCP server %s", p.Name, b.set.describe())
	}
	name := p.Name
	spec := sdk.Tool{
		Name:        b.set.toolName(promptNamePrefix + name),
		OwnerPrefix: b.set.ownerPrefix,
		Kind:        kindPrompt,
		Description: desc,
		Parameters:  string(params),
		ReadOnly:    true,
		Idempotent:  true,
		Timeout:     b.set.timeout,
		Notes:       notes,
		Definition:  wireDefinition(promptPinPrefix+name, def),
		Execute: func(ctx context.Context, call *sdk.Call) (any, error) {
			var args map[string]string
			if len(call.Arguments) > 0 {
				if err := call.Bind(&args); err != nil {
					return nil, err
				}
			}
			return b.upstream(ctx, "prompts/get", func(ctx context.Context) (any, error) {
				return b.getPrompt(ctx, name, args)
			})
		},
	}
	if len(held) > 0 {
		spec = holdTool(spec, name, strings.Join(held, "; "))
	}
	return spec
}

func (b *bridge) getPrompt(ctx context.Context, name string, args map[string]string) (*mcp.GetPromptResult, error) {
	res, err := b.cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return nil, fmt.Errorf("prompts/get %s on the MCP server %s: %w", name, b.set.describe(), err)
	}
	res.Meta = nil
	return res, nil
}

// promptText is the text of a prompt's text messages, for the description
// checks.
func promptText(r *mcp.GetPromptResult) string {
	var parts []string
	for _, m := range r.Messages {
		if t, ok := m.Content.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// upstream runs one request to the server for a call, as call does for
// tools/call: refused at once when the server went away, counted among the
// calls in flight, ended when the session ends.
func (b *bridge) upstream(ctx context.Context, what string, do func(context.Context) (any, error)) (any, error) {
	b.mu.Lock()
	if b.gone != nil {
		err := b.gone
		b.mu.Unlock()
		return nil, err
	}
	b.calls.Add(1)
	b.mu.Unlock()
	defer b.calls.Done()
	ctx, err := b.set.withCallToken(ctx)
	if err != nil {
		return nil, err
	}
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(b.deadCtx, cancel)()
	v, err := do(cctx)
	if err != nil && ctx.Err() != nil {
		return nil, fmt.Errorf("%s: %w", what, ctx.Err())
	}
	return v, err
}

func (b *bridge) resourcesSubscribeEntry() sdk.Tool {
	return sdk.Tool{
		Name:        b.set.toolName(resourcesSubName),
		OwnerPrefix: b.set.ownerPrefix,
		Kind:        kindSubscribe,
		Description: fmt.Sprintf("Subscribes to the changes of a resource of the MCP server %s by its URI.", b.set.describe()),
		Parameters:  `{"type":"object","properties":{"uri":{"type":"string","minLength":1}},"required":["uri"],"additionalProperties":false}`,
		ReadOnly:    true,
		Idempotent:  true,
		Timeout:     b.set.timeout,
		Execute: func(ctx context.Context, call *sdk.Call) (any, error) {
			var args struct {
				URI string `json:"uri"`
			}
			if err := call.Bind(&args); err != nil {
				return nil, err
			}
			if why := b.heldRead(args.URI); why != "" {
				return nil, errors.New(why)
			}
			return b.upstream(ctx, "resources/subscribe", func(ctx context.Context) (any, error) {
				// The server keeps one subscription per URI for the
				// bridge, whoever asked; the host tells each subscribed
				// client. It is not withdrawn when the clients leave: an
				// update nobody follows is dropped by the host.
				if err := b.cs.Subscribe(ctx, &mcp.SubscribeParams{URI: args.URI}); err != nil {
					return nil, fmt.Errorf("resources/subscribe %s on the MCP server %s: %w", args.URI, b.set.describe(), err)
				}
				return map[string]any{"subscribed": args.URI}, nil
			})
		},
	}
}

func (b *bridge) setNotify(updated func(ctx context.Context, uri string) error, listChanged func(ctx context.Context) error) {
	b.mu.Lock()
	b.notify = func(ctx context.Context, uri string) error {
		if uri == "" {
			return listChanged(ctx)
		}
		return updated(ctx, uri)
	}
	b.mu.Unlock()
}

// resourceUpdated passes the server's notifications/resources/updated (and,
// with no URI, its resources/list_changed) to the host, in the background:
// the SDK calls it on the session's reader.
func (b *bridge) resourceUpdated(uri string) {
	if uri == "" {
		// The list changed: register again too, so that the list entry's
		// pins (host lock) are the server's current ones.
		b.listChanged()
	}
	b.mu.Lock()
	notify := b.notify
	if notify == nil || b.closing {
		b.mu.Unlock()
		return
	}
	// Added under mu while not closing: close sets closing before it
	// waits for wg.
	b.wg.Add(1)
	b.mu.Unlock()
	go func() {
		defer b.wg.Done()
		ctx, cancel := context.WithTimeout(b.base, 10*time.Second)
		defer cancel()
		if err := notify(ctx, uri); err != nil && b.base.Err() == nil {
			b.log.Debug("resource update not passed to the host", "uri", uri, "error", err)
		}
	}()
}
