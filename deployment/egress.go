package deployment

import (
	"github.com/hashicorp/hcl/v2"
	"github.com/zclconf/go-cty/cty"

	"github.com/plugkit-go/plugkit/egress"
	"github.com/plugkit-go/plugkit/sandbox"
)

// egress reads egress = ["api.github.com", "*.slack.com:443",
// "10.0.0.0/8:5432", ...]: the plugin gets a network namespace of its own
// whose only way out is the host's forward proxy, which reaches what the
// list names (package egress).
func (p *parser) egress(expr hcl.Expression) *sandbox.Network {
	r := expr.Range()
	v, diags := expr.Value(nil)
	if diags.HasErrors() {
		p.diags = append(p.diags, diags...)
		return nil
	}
	if v.IsNull() || !v.IsKnown() || !(v.Type().IsTupleType() || v.Type().IsListType()) {
		p.errorf(r, "Invalid egress", `egress must be a list of destinations the plugin may reach through the host's proxy: host names ("api.github.com"), wildcards ("*.slack.com"), address ranges ("10.0.0.0/8"), each with an optional :PORT (443 when left out); [] allows nothing.`)
		return nil
	}
	n := &sandbox.Network{Mode: sandbox.NetworkEgress, Egress: []string{}}
	i := 0
	for it := v.ElementIterator(); it.Next(); i++ {
		_, e := it.Element()
		if e.IsNull() || !e.IsKnown() || e.Type() != cty.String {
			p.errorf(tupleItem(expr, i), "Invalid egress entry", "Item %d of egress is not a string.", i+1)
			continue
		}
		rule, err := egress.ParseRule(e.AsString())
		if err != nil {
			p.errorf(tupleItem(expr, i), "Invalid egress entry", "Item %d of egress: %v.", i+1, err)
			continue
		}
		n.Egress = append(n.Egress, rule.String())
	}
	return n
}
