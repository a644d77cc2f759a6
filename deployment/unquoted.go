package deployment

import (
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// unquoted gives a value written without quotes (admin_socket =
// run/host.sock) one error that says so, in place of everything reported
// within it: HCL reads such a value as variables, which a deployment file
// has none of, so it said "Variables not allowed" per word and "value must
// be known", and the checks of the value that was never decoded added a
// first error about an empty setting, unrelated to what is wrong.
func unquoted(body hcl.Body, src []byte, diags hcl.Diagnostics) hcl.Diagnostics {
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		return diags
	}
	var found []*hcl.Diagnostic
	var ranges []hcl.Range
	var walk func(b *hclsyntax.Body)
	walk = func(b *hclsyntax.Body) {
		for name, a := range b.Attributes {
			if len(a.Expr.Variables()) == 0 {
				continue
			}
			r := a.Expr.Range()
			text := string(r.SliceBytes(src))
			ranges = append(ranges, r)
			if isReference(a.Expr) {
				found = append(found, errorAt(r, "Variables not allowed",
					"%s = %s: a deployment file has no variables or references; write the value itself (a string in double quotes).", name, text))
				continue
			}
			fix := fmt.Sprintf("%s = %q", name, text)
			if strings.ContainsAny(text, "\"[]{}()") {
				// A list or an expression: no one quoted form to offer.
				fix = "write each string in double quotes"
			}
			found = append(found, errorAt(r, "Unquoted value",
				"%s = %s: a deployment file has no variables or references, so a string is written in double quotes: %s.", name, text, fix))
		}
		for _, blk := range b.Blocks {
			walk(blk.Body)
		}
	}
	walk(sb)
	if len(found) == 0 {
		return diags
	}
	out := make(hcl.Diagnostics, 0, len(diags)+len(found))
	for _, d := range diags {
		if d.Subject == nil || !inRanges(*d.Subject, ranges) {
			out = append(out, d)
		}
	}
	return sortDiags(append(out, found...))
}

// inRanges reports whether r lies inside one of ranges.
func inRanges(r hcl.Range, ranges []hcl.Range) bool {
	for _, o := range ranges {
		if r.Filename == o.Filename && r.Start.Byte >= o.Start.Byte && r.End.Byte <= o.End.Byte {
			return true
		}
	}
	return false
}

// isReference reports whether expr is written as a reference in another
// HCL language (var.root, local.x), rather than a word left unquoted.
func isReference(expr hclsyntax.Expression) bool {
	t, ok := expr.(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(t.Traversal) < 2 {
		return false
	}
	switch t.Traversal.RootName() {
	case "var", "local", "each", "count", "self", "module", "data", "path", "terraform":
		return true
	}
	return false
}
