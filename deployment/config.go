package deployment

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// configJSON converts a config block's body to a JSON object (the rules are
// in docs/deployment-file.md). It also returns where each value was
// written, keyed by JSON Pointer ("" is the block itself), so that a schema
// error at an instance location can be reported in the file.
func configJSON(body hcl.Body, def hcl.Range) (json.RawMessage, map[string]hcl.Range, hcl.Diagnostics) {
	src := map[string]hcl.Range{"": def}
	sb, ok := body.(*hclsyntax.Body)
	if !ok {
		// Parse only makes native-syntax bodies.
		return json.RawMessage("{}"), src, hcl.Diagnostics{errorAt(def, "Unsupported config", "The config block must be written in native HCL syntax.")}
	}
	obj, diags := bodyObject(sb, "", src)
	raw, err := json.Marshal(obj)
	if err != nil {
		// Every leaf is JSON written by go-cty, so this is a bug.
		diags = append(diags, errorAt(def, "Invalid config", "The config block cannot be written as JSON: %v.", err))
		return json.RawMessage("{}"), src, diags
	}
	return raw, src, diags
}

// bodyObject converts one body (the config block's or a nested block's) to
// an object whose leaves are json.RawMessage.
func bodyObject(b *hclsyntax.Body, ptr string, src map[string]hcl.Range) (map[string]any, hcl.Diagnostics) {
	var diags hcl.Diagnostics
	obj := map[string]any{}
	for _, a := range sortedAttributes(b) {
		v, d := a.Expr.Value(nil)
		diags = append(diags, d...)
		if d.HasErrors() {
			continue
		}
		raw, err := ctyjson.Marshal(v, v.Type())
		if err != nil {
			diags = append(diags, errorAt(a.Expr.Range(), "Invalid config value", "The value of %q cannot be written as JSON: %v.", a.Name, err))
			continue
		}
		obj[a.Name] = json.RawMessage(raw)
		p := ptr + "/" + escapePointer(a.Name)
		src[p] = a.SrcRange
		mapExpression(a.Expr, p, src)
	}
	counts := map[string]int{}
	for _, blk := range b.Blocks {
		if _, isAttr := b.Attributes[blk.Type]; isAttr {
			diags = append(diags, errorAt(blk.TypeRange, "Duplicate config key",
				"%q is both an argument (line %d) and a block type; a config key is one or the other.", blk.Type, b.Attributes[blk.Type].SrcRange.Start.Line))
			continue
		}
		i := counts[blk.Type]
		counts[blk.Type] = i + 1
		list := ptr + "/" + escapePointer(blk.Type)
		if i == 0 {
			src[list] = blk.TypeRange
		}
		item := list + "/" + strconv.Itoa(i)
		src[item] = blk.DefRange()
		inner, d := bodyObject(blk.Body, item, src)
		diags = append(diags, d...)
		switch len(blk.Labels) {
		case 0:
		case 1:
			if a, ok := blk.Body.Attributes["name"]; ok {
				diags = append(diags, errorAt(a.NameRange, "Duplicate config key",
					"This %s block has the label %q, which becomes its \"name\"; it cannot also set name.", blk.Type, blk.Labels[0]))
			}
			label, _ := json.Marshal(blk.Labels[0])
			inner["name"] = json.RawMessage(label)
			src[item+"/name"] = blk.LabelRanges[0]
		default:
			diags = append(diags, errorAt(blk.LabelRanges[1], "Too many labels",
				"A config block has at most one label, which becomes its \"name\"; this %s block has %d.", blk.Type, len(blk.Labels)))
		}
		arr, _ := obj[blk.Type].([]any)
		obj[blk.Type] = append(arr, inner)
	}
	return obj, diags
}

// mapExpression records where the items of a literal list or object were
// written, below ptr.
func mapExpression(e hclsyntax.Expression, ptr string, src map[string]hcl.Range) {
	switch e := e.(type) {
	case *hclsyntax.TupleConsExpr:
		for i, x := range e.Exprs {
			p := ptr + "/" + strconv.Itoa(i)
			src[p] = x.Range()
			mapExpression(x, p, src)
		}
	case *hclsyntax.ObjectConsExpr:
		for _, it := range e.Items {
			k, d := it.KeyExpr.Value(nil)
			if d.HasErrors() || !k.IsKnown() || k.IsNull() {
				continue
			}
			if k, err := convert.Convert(k, cty.String); err == nil {
				p := ptr + "/" + escapePointer(k.AsString())
				src[p] = hcl.RangeBetween(it.KeyExpr.Range(), it.ValueExpr.Range())
				mapExpression(it.ValueExpr, p, src)
			}
		}
	case *hclsyntax.ParenthesesExpr:
		mapExpression(e.Expression, ptr, src)
	}
}

// escapePointer escapes one JSON Pointer token (RFC 6901).
func escapePointer(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
}

// pointer renders instance location tokens as a JSON Pointer.
func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteByte('/')
		b.WriteString(escapePointer(t))
	}
	return b.String()
}

// locate finds where the value at the instance location was written: the
// nearest written ancestor when the value itself was not (a missing key),
// else fallback.
func locate(src map[string]hcl.Range, tokens []string, fallback hcl.Range) hcl.Range {
	for n := len(tokens); n >= 0; n-- {
		if r, ok := src[pointer(tokens[:n])]; ok {
			return r
		}
	}
	return fallback
}

// describePointer renders a location for a message: "config" for the root,
// else "config at /a/0/b".
func describePointer(tokens []string) string {
	if len(tokens) == 0 {
		return "config"
	}
	return fmt.Sprintf("config at %s", pointer(tokens))
}
