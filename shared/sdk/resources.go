package sdk

import (
	"context"
	"fmt"

	"github.com/plugkit-go/plugkit/shared/pb"
)

// A plugin offers resources and prompts as entries of the host's tool
// registry with a kind (Tool.Kind). The host serves them to MCP clients as
// resources and prompts, never as tools, and every list, read and get is a
// call through the five stages like a tool call: rules and guards see the
// arguments, the secrets scanner the value, the audit one line per call.
// The MCP bridge offers its servers' resources and prompts so; a Go plugin
// can offer its own the same way.
const (
	// KindResources lists the plugin's resources. Parameters: none
	// ({"type":"object"}). Value: {"resources": [MCP Resource...],
	// "resourceTemplates": [MCP ResourceTemplate...]}, with the plugin's
	// own URIs; the host serves them as plugkit://PLUGIN/URI.
	KindResources = "resources"
	// KindResource reads one resource. Arguments: {"uri": the plugin's own
	// URI}. Value: {"contents": [MCP ResourceContents...]}.
	KindResource = "resource"
	// KindPrompt gets one prompt, served under the entry's name. Its
	// parameters' properties are the prompt's arguments (strings; required
	// as the schema says). Value: an MCP GetPromptResult ({"description":
	// ..., "messages": [...]}).
	KindPrompt = "prompt"
	// KindResourceSubscribe subscribes to one resource's changes.
	// Arguments: {"uri": the plugin's own URI}. The plugin then reports each
	// change with Context.ResourceUpdated; the host tells the clients
	// subscribed to it.
	KindResourceSubscribe = "resource_subscribe"
)

// ResourcesListChanged tells the host that the plugin's list of resources
// or resource templates changed, so that the clients are told to list
// again. It counts against the same bound as ResourceUpdated.
func (p *Context) ResourcesListChanged(ctx context.Context) error {
	host, err := p.srv.hostClient()
	if err != nil {
		return err
	}
	if _, err := host.ResourceUpdated(ctx, &pb.ResourceUpdatedRequest{ListChanged: true}); err != nil {
		return fmt.Errorf("resources list changed: %w", hostError(ctx, err))
	}
	return nil
}

// ResourceUpdated tells the host that the resource uri (the plugin's own
// URI) changed, so that the clients subscribed to it are told. The host
// takes a bounded number a second and refuses the excess.
func (p *Context) ResourceUpdated(ctx context.Context, uri string) error {
	host, err := p.srv.hostClient()
	if err != nil {
		return err
	}
	if _, err := host.ResourceUpdated(ctx, &pb.ResourceUpdatedRequest{Uri: uri}); err != nil {
		return fmt.Errorf("resource updated: %w", hostError(ctx, err))
	}
	return nil
}
