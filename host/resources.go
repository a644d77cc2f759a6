package host

import (
	"context"

	"github.com/plugkit-go/plugkit/kernel"
)

// EventResourceUpdated is emitted on the kernel's events when a plugin says
// a resource it offers changed; its payload is a ResourceUpdate.
const EventResourceUpdated = "resource.updated"

// ResourceUpdate is a resource that changed: the plugin that offers it and
// its URI as the plugin gives it; or, with ListChanged (and no URI), the
// plugin's list of resources.
type ResourceUpdate struct {
	Plugin, URI string
	ListChanged bool
}

// resourceUpdated is the plugin manager's OnResourceUpdated; uri "" is a
// change of the plugin's list.
func (h *Host) resourceUpdated(plugin, uri string) {
	h.k.Events().Emit(context.Background(), EventResourceUpdated, ResourceUpdate{Plugin: plugin, URI: uri, ListChanged: uri == ""})
}

// OnResourceUpdated calls fn, on behalf of owner, with every resource a
// plugin says changed, until remove is called. fn must not block.
func (h *Host) OnResourceUpdated(owner string, fn func(ResourceUpdate)) (remove func()) {
	return h.k.Events().Listen(EventResourceUpdated, owner, func(_ context.Context, payload any, _ kernel.Next) (any, error) {
		if u, ok := payload.(ResourceUpdate); ok {
			fn(u)
		}
		return nil, nil
	})
}
