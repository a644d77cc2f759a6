package host

import (
	"context"
	"slices"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/kernel"
	"github.com/plugkit-go/plugkit/pipeline"
)

// shadowRules are the pipeline's shadow rules for d's plugins' shadow
// blocks: one per rule named, or one for the whole plugin.
func shadowRules(d *deployment.Deployment) []pipeline.ShadowRule {
	var out []pipeline.ShadowRule
	for _, p := range d.Plugins {
		for _, sh := range p.Shadow {
			if len(sh.Rules) == 0 {
				out = append(out, pipeline.ShadowRule{Plugin: p.Name, EnforceFor: sh.EnforceFor})
				continue
			}
			for _, r := range sh.Rules {
				out = append(out, pipeline.ShadowRule{Plugin: p.Name, Rule: r, EnforceFor: sh.EnforceFor})
			}
		}
	}
	return out
}

// EventShadowChanged is emitted on the kernel's events when a reload
// changes the deployment's shadow rules: what a caller may see can change
// with no plugin reloaded and no tool registered.
const EventShadowChanged = "shadow.changed"

// setShadow applies d's shadow rules, and says so to OnShadowChanged's
// listeners when they differ from the rules before.
func (h *Host) setShadow(d *deployment.Deployment) error {
	before := h.tools.Shadow()
	if err := h.tools.SetShadow(shadowRules(d)); err != nil {
		return err
	}
	if !slices.EqualFunc(before, h.tools.Shadow(), func(a, b pipeline.ShadowRule) bool {
		return a.Plugin == b.Plugin && a.Rule == b.Rule && slices.Equal(a.EnforceFor, b.EnforceFor)
	}) {
		h.k.Events().Emit(context.Background(), EventShadowChanged, nil)
	}
	return nil
}

// OnShadowChanged calls fn, on behalf of owner, after each reload that
// changed the deployment's shadow rules, until remove is called. fn must
// not block.
func (h *Host) OnShadowChanged(owner string, fn func()) (remove func()) {
	return h.k.Events().Listen(EventShadowChanged, owner, func(context.Context, any, kernel.Next) (any, error) {
		fn()
		return nil, nil
	})
}
