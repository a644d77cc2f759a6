package deployment

import (
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"
)

// Tool pins: the definitions of the tools a plugin bridges from a server it
// does not vouch for (the mcp plugin), pinned so that a server cannot
// redefine a tool after it was reviewed. They live in the plugin's config
// block as `pins = { tool = "…" }`, beside the binary's sha256 in the same
// file, rather than in a lock file: the plugin receives its config block
// and nothing else, a reload of the file applies binary and tool pins
// together, and one diff of one file shows a reviewer everything that was
// accepted. The plugin checks them; the host only writes them (LockTools).

// ToolPinChange is what LockTools changed in one plugin's pins.
type ToolPinChange struct {
	Plugin string
	// Added, Removed: tools new to the pins, and tools no longer listed.
	Added, Removed []string
	// Changed: tool → the parts of its definition that differ ("description").
	Changed map[string][]string
	// First: the block had no pins before.
	First bool
}

// Empty reports whether nothing changed.
func (c ToolPinChange) Empty() bool {
	return !c.First && len(c.Added) == 0 && len(c.Removed) == 0 && len(c.Changed) == 0
}

// LockTools writes pins (plugin → tool → pin) into each named plugin's
// config block of the file at path, keeping its comments and layout. A pin
// is "part=digest part=digest …"; Changed names the parts that differ.
func LockTools(path string, pins map[string]map[string]string) ([]ToolPinChange, hcl.Diagnostics) {
	src, diags := readChecked(path)
	if diags.HasErrors() {
		return nil, diags
	}
	f, diags := hclwrite.ParseConfig(src, path, hcl.InitialPos)
	if diags.HasErrors() {
		return nil, diags
	}
	var out []ToolPinChange
	done := map[string]bool{}
	for _, b := range f.Body().Blocks() {
		if b.Type() != "plugin" || len(b.Labels()) != 1 {
			continue
		}
		name := b.Labels()[0]
		want, ok := pins[name]
		if !ok {
			continue
		}
		done[name] = true
		cfg := b.Body().FirstMatchingBlock("config", nil)
		if cfg == nil {
			cfg = b.Body().AppendNewBlock("config", nil)
		}
		old, had := mapAttr(cfg.Body(), "pins")
		ch := ToolPinChange{Plugin: name, First: !had, Changed: map[string][]string{}}
		for _, tool := range slices.Sorted(maps.Keys(want)) {
			prev, ok := old[tool]
			switch {
			case !ok:
				ch.Added = append(ch.Added, tool)
			case prev != want[tool]:
				ch.Changed[tool] = pinDiff(prev, want[tool])
			}
		}
		for _, tool := range slices.Sorted(maps.Keys(old)) {
			if _, ok := want[tool]; !ok {
				ch.Removed = append(ch.Removed, tool)
			}
		}
		if !ch.Empty() {
			vals := map[string]cty.Value{}
			for k, v := range want {
				vals[k] = cty.StringVal(v)
			}
			if len(vals) == 0 {
				cfg.Body().SetAttributeValue("pins", cty.MapValEmpty(cty.String))
			} else {
				cfg.Body().SetAttributeValue("pins", cty.MapVal(vals))
			}
		}
		out = append(out, ch)
	}
	for name := range pins {
		if !done[name] {
			diags = append(diags, &hcl.Diagnostic{Severity: hcl.DiagError, Summary: "No such plugin",
				Detail: fmt.Sprintf("%s has no plugin %q to pin the tools of.", path, name)})
		}
	}
	if diags.HasErrors() {
		return nil, diags
	}
	if err := writeKeepingMode(path, f.Bytes()); err != nil {
		return nil, hcl.Diagnostics{{Severity: hcl.DiagError, Summary: "Cannot write deployment file", Detail: err.Error() + "."}}
	}
	return out, nil
}

// pinDiff names the parts of two pins that differ.
func pinDiff(a, b string) []string {
	parse := func(s string) map[string]string {
		m := map[string]string{}
		for _, f := range strings.Fields(s) {
			if k, v, ok := strings.Cut(f, "="); ok {
				m[k] = v
			}
		}
		return m
	}
	pa, pb := parse(a), parse(b)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(pb)) {
		if pa[k] != pb[k] {
			out = append(out, k)
		}
	}
	if len(out) == 0 {
		out = []string{"pin format"}
	}
	return out
}

// mapAttr reads a literal map of strings attribute of a block being edited.
func mapAttr(b *hclwrite.Body, name string) (map[string]string, bool) {
	a := b.GetAttribute(name)
	if a == nil {
		return nil, false
	}
	src := a.Expr().BuildTokens(nil).Bytes()
	expr, diags := hclsyntax.ParseExpression(src, name, hcl.InitialPos)
	if diags.HasErrors() {
		return map[string]string{}, true
	}
	v, diags := expr.Value(nil)
	out := map[string]string{}
	if diags.HasErrors() || v.IsNull() || !(v.Type().IsObjectType() || v.Type().IsMapType()) {
		return out, true
	}
	for k, e := range v.AsValueMap() {
		if e.Type() == cty.String && !e.IsNull() {
			out[k] = e.AsString()
		}
	}
	return out, true
}

// writeKeepingMode replaces the file at path with data through a file
// beside it and a rename, so that a failure never leaves half a file.
func writeKeepingMode(path string, data []byte) error {
	info, err := os.Stat(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".lock-*.hcl")
	if err != nil {
		return err
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), info.Mode().Perm())
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
	}
	return err
}

// checkToolPins warns about a plugin that can pin the definitions of the
// tools it bridges (its config schema declares a pins attribute: the mcp
// plugin) but whose block has none: it runs, trusting its server's
// definitions as they come.
func checkToolPins(p Plugin, schema json.RawMessage) hcl.Diagnostics {
	var decl struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(schema, &decl) != nil {
		return nil
	}
	if _, ok := decl.Properties["pins"]; !ok {
		return nil
	}
	var cfg map[string]json.RawMessage
	if json.Unmarshal(p.Config, &cfg) == nil {
		if _, ok := cfg["pins"]; ok {
			return nil
		}
	}
	r := p.Range
	return hcl.Diagnostics{{Severity: hcl.DiagWarning, Summary: "Bridged server unpinned",
		Detail:  fmt.Sprintf("Plugin %q bridges tools whose definitions are not pinned: its server can change them at any time. With the host running, `host lock %s` pins them.", p.Name, p.Name),
		Subject: &r}}
}
