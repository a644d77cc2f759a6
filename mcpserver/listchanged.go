package mcpserver

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/pipeline"
)

// Clients are told notifications/resources/list_changed when the resources
// they may list change: a plugin that offers resources comes, goes or
// changes its entry (syncLists), or a bridged server sends its own
// list_changed (the bridge passes it on through Host.ResourceUpdated,
// bounded per plugin process). A prompt is an entry of the registry, so a
// server's prompts/list_changed re-registers its prompts and the SDK tells
// the clients prompts/list_changed (prompts.go).
//
// The resources are served by middleware, not held by the SDK, which sends
// a list change only when its own resources change: adding and removing a
// resource it holds for this alone makes it notify, debounced, every
// session of 2025-11-25 and before, and the 2026-07-28 clients listening
// for it (subscriptions/listen). Nothing lists or reads that resource: the
// middleware answers every list and read.

// listChangedURI is the resource held only to make the SDK notify.
const listChangedURI = "plugkit-internal:resources-list-changed"

// resourcesChanged tells the clients that the resource lists changed.
func (s *Server) resourcesChanged() {
	s.mcp.AddResource(&mcp.Resource{URI: listChangedURI, Name: "list-changed"}, notServed)
	s.mcp.RemoveResources(listChangedURI)
}

// notServed is the handler of listChangedURI, which is never read.
func notServed(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	return nil, &jsonrpc.Error{Code: codeResourceNotFound, Message: "no such resource"}
}

// syncLists tells the clients of a change in the registry's served
// "resources" entries (a bridge with resources came, went or changed).
// Only sync calls it.
func (s *Server) syncLists(current []pipeline.ToolInfo) {
	seen := map[string]bool{}
	changed := false
	for _, t := range current {
		if t.Kind != kindResources || t.Held != "" {
			continue
		}
		seen[t.Name] = true
		if old, ok := s.lists[t.Name]; !ok || !sameTool(old, t) {
			s.lists[t.Name] = t
			changed = true
		}
	}
	for name := range s.lists {
		if !seen[name] {
			delete(s.lists, name)
			changed = true
		}
	}
	if changed {
		s.resourcesChanged()
	}
}
