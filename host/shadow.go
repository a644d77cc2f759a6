package host

import (
	"github.com/plugkit-go/plugkit/deployment"
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
