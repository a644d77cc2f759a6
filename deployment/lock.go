package deployment

import (
	"fmt"
	"path/filepath"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Pin is one plugin whose pinned checksum Lock set.
type Pin struct {
	Plugin string
	SHA256 string
	// Old is the checksum the file pinned before, "" when it pinned none.
	Old string
}

// Lock pins every plugin of the file at path to the SHA-256 of its binary as
// it is now, writing `sha256 = "…"` into each plugin block. It edits the
// file in place and keeps its comments and layout; only the sha256 lines
// change. A file with syntax errors, or a plugin whose binary cannot be
// read, is not touched.
func Lock(path string) ([]Pin, hcl.Diagnostics) {
	src, diags := readChecked(path)
	if diags.HasErrors() {
		return nil, diags
	}
	f, diags := hclwrite.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	// The syntax tree gives positions for diagnostics; hclwrite gives edits.
	syn, _ := hclsyntax.ParseConfig(src, path, hcl.InitialPos)
	var pins []Pin
	dir := filepath.Dir(path)
	for i, b := range f.Body().Blocks() {
		if b.Type() != "plugin" || len(b.Labels()) != 1 {
			continue
		}
		name := b.Labels()[0]
		rng := blockRange(syn, i, path)
		written, ok := stringAttr(b.Body(), "path")
		if !ok {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Missing path", Detail: fmt.Sprintf("Plugin %q has no path to pin.", name), Subject: rng})
			continue
		}
		bin := written
		if !filepath.IsAbs(bin) {
			bin = filepath.Join(dir, bin)
		}
		sum, err := fileSHA256(bin)
		if err != nil {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "Cannot pin plugin binary", Detail: fmt.Sprintf("Plugin %q: %v.", name, err), Subject: rng})
			continue
		}
		old, _ := stringAttr(b.Body(), "sha256")
		if old != sum {
			b.Body().SetAttributeValue("sha256", cty.StringVal(sum))
		}
		pins = append(pins, Pin{Plugin: name, SHA256: sum, Old: old})
	}
	if diags.HasErrors() {
		return nil, diags
	}
	// Written beside the file and renamed, so a failure never leaves half a file.
	if err := writeKeepingMode(path, f.Bytes()); err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot write deployment file", Detail: err.Error() + "."}}
	}
	return pins, nil
}

// blockRange is the position of the i-th top-level block, for diagnostics.
func blockRange(f *hcl.File, i int, path string) *hcl.Range {
	if f != nil {
		if body, ok := f.Body.(*hclsyntax.Body); ok && i < len(body.Blocks) {
			r := body.Blocks[i].DefRange()
			return &r
		}
	}
	return &hcl.Range{Filename: path}
}

// stringAttr reads a literal string attribute of a block being edited.
func stringAttr(b *hclwrite.Body, name string) (string, bool) {
	a := b.GetAttribute(name)
	if a == nil {
		return "", false
	}
	src := a.Expr().BuildTokens(nil).Bytes()
	expr, diags := hclsyntax.ParseExpression(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return "", false
	}
	v, diags := expr.Value(nil)
	if diags.HasErrors() || v.Type() != cty.String || v.IsNull() {
		return "", false
	}
	return v.AsString(), true
}
