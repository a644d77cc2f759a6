package host

import (
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// OnStateChange calls fn, on behalf of owner (named in the kernel's logs),
// with every change of a plugin's state until remove is called; ACTIVE to
// ACTIVE is a reload. fn runs while the change is being made: it must not
// block, nor load, unload or restart a plugin.
func (h *Host) OnStateChange(owner string, fn func(kernel.StateChange)) (remove func()) {
	return h.k.Events().OnStateChange(owner, fn)
}

// OnToolsChanged calls fn after every change to the registered tools,
// outside any lock, until remove is called. Calls may overlap when changes
// do: fn should read the tools afresh (Tools).
func (h *Host) OnToolsChanged(fn func()) (remove func()) {
	return h.k.Points().Watch(pipeline.PointTools, fn)
}
