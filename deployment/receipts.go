package deployment

import (
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Receipts are taken from one plugin only: the one receipts_from names, or
// the one critical plugin that declares receipts. Otherwise a second
// critical plugin with a result listener could hand back its own receipt
// in place of the audit's.

// checkReceiptsFrom holds receipts_from to what the file alone can tell:
// it needs receipts, and names a critical plugin of the deployment.
func (p *parser) checkReceiptsFrom(d *Deployment) {
	h := &d.Host
	if h.ReceiptsFromRange.Filename == "" {
		return
	}
	r := h.ReceiptsFromRange
	if !h.Receipts {
		p.errorf(r, "receipts_from without receipts", "receipts_from names where receipts come from, but receipts is not on; add receipts = true or leave receipts_from out.")
		return
	}
	for _, pl := range d.Plugins {
		if pl.Name != h.ReceiptsFrom {
			continue
		}
		if !pl.Critical {
			p.errorf(r, "Invalid receipts_from", "receipts_from names plugin %q, which is not critical: only a critical plugin's result listener holds up calls until it has recorded them. Add critical = true to it.", pl.Name)
		}
		return
	}
	var names []string
	for _, pl := range d.Plugins {
		if pl.Critical {
			names = append(names, strconv.Quote(pl.Name))
		}
	}
	p.errorf(r, "Invalid receipts_from", "receipts_from names %q, which is no plugin of this deployment; the critical plugins are: %s.", h.ReceiptsFrom, orNone(names))
}

// receiptClaims refuses two critical plugins that both declare receipts
// when receipts_from does not say which one's to take, at the second.
func receiptClaims(d *Deployment, decls []Declaration) hcl.Diagnostics {
	if !d.Host.Receipts || d.Host.ReceiptsFrom != "" {
		return nil
	}
	var first *Plugin
	var diags hcl.Diagnostics
	for i := range d.Plugins {
		pl := &d.Plugins[i]
		if !pl.Critical || !decls[i].Receipts {
			continue
		}
		if first == nil {
			first = pl
			continue
		}
		diags = append(diags, errorAt(pl.Range, "Two plugins declare receipts",
			"Plugins %q (line %d) and %q both declare receipts; receipts are taken from one plugin only. Name it in the host block: receipts_from = %q.",
			first.Name, first.Range.Start.Line, pl.Name, first.Name))
	}
	return diags
}

func orNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
