package deployment

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// Declaration is what a plugin says about itself (its describe answer).
type Declaration struct {
	// ConfigSchema is the JSON Schema its config must match; empty accepts
	// anything.
	ConfigSchema json.RawMessage
	// Inject lists the services it needs.
	Inject []string
	// Provides lists the services it provides to others.
	Provides []string
	// Receipts: the plugin declares itself an audit that sends receipts.
	Receipts bool
	// Visibility: its listeners answer the visibility question.
	Visibility bool
}

// Check adds to Parse what needs each plugin's own declaration, which
// describe obtains (typically by starting the binary and asking it). It
// reports every problem, sorted by position:
//
//   - a describe error, at the plugin block;
//   - a config body that its declared schema rejects, at the value concerned
//     (or the block that lacks a required key);
//   - a service the plugin declares it needs that its inject leaves out (the
//     remote manager refuses such a plugin);
//   - a service provided twice, or a plugin providing a built-in one;
//   - an injected service that is neither built in (tools, points, logger)
//     nor provided by a plugin of the deployment, at the inject item;
//   - a dependency cycle, naming its plugins.
//
// When some plugin cannot be described, the last four are not checked:
// what it provides is unknown.
//
// Without errors, Check fills in Inject where the file leaves it out (with
// what the plugin declares) and puts d.Plugins in start order: file order,
// except that a plugin waits until every plugin providing a service it
// injects has started. With errors, d is left as it was.
//
// describe is called once per plugin, concurrently, and should honour ctx.
func Check(ctx context.Context, d *Deployment, describe func(ctx context.Context, p Plugin) (Declaration, error)) hcl.Diagnostics {
	n := len(d.Plugins)
	decls, diags, described := describeAll(ctx, d.Plugins, d.Approvals, describe)
	if !described {
		return sortDiags(diags)
	}

	diags = append(diags, secretFileWarnings(d.Plugins, decls)...)
	diags = append(diags, receiptClaims(d, decls)...)
	g := newGraph(d.Plugins, decls)
	diags = append(diags, g.diags...)
	diags = append(diags, g.cycles()...)
	if diags.HasErrors() {
		return sortDiags(diags)
	}
	ordered := make([]Plugin, 0, n)
	for _, i := range g.order() {
		p := d.Plugins[i]
		p.Inject = g.inject[i]
		p.AnswersVisibility = decls[i].Visibility
		ordered = append(ordered, p)
	}
	d.Plugins = ordered
	return sortDiags(diags)
}

// describeAll asks each plugin for its declaration, concurrently, and
// checks its config; described is false when one could not be asked.
func describeAll(ctx context.Context, plugins []Plugin, routes []Approval, describe func(ctx context.Context, p Plugin) (Declaration, error)) (decls []Declaration, diags hcl.Diagnostics, described bool) {
	decls = make([]Declaration, len(plugins))
	errs := make([]error, len(plugins))
	var wg sync.WaitGroup
	for i := range plugins {
		wg.Go(func() { decls[i], errs[i] = describe(ctx, plugins[i]) })
	}
	wg.Wait()
	described = true
	for i, p := range plugins {
		if errs[i] != nil {
			described = false
			diags = append(diags, errorAt(p.Range, "Cannot describe plugin", "Plugin %q could not be asked for its declaration: %v.", p.Name, errs[i]))
			continue
		}
		diags = append(diags, checkConfig(p, decls[i].ConfigSchema, routes)...)
		diags = append(diags, checkToolPins(p, decls[i].ConfigSchema)...)
	}
	return decls, diags, described
}

// CheckConfigs is what Check can still do for a file Parse found errors
// in, so that one mistake does not hide another: it asks each plugin whose
// binary and config block Parse found nothing wrong with for its
// declaration, and checks its config against the schema it declares. The
// dependencies between plugins are not checked (a plugin with errors may
// be the provider another one needs).
//
// It returns found with what it adds, sorted by position.
func CheckConfigs(ctx context.Context, d *Deployment, found hcl.Diagnostics, describe func(ctx context.Context, p Plugin) (Declaration, error)) hcl.Diagnostics {
	var ok []Plugin
	for _, p := range d.Plugins {
		if p.binaryOK && p.configOK {
			ok = append(ok, p)
		}
	}
	_, diags, _ := describeAll(ctx, ok, d.Approvals, describe)
	return sortDiags(append(found, diags...))
}

// source returns where p's values were written, which a Plugin built in
// code does not know.
func (p Plugin) source() *pluginSource {
	if p.src != nil {
		return p.src
	}
	return &pluginSource{config: map[string]hcl.Range{"": p.ConfigRange}}
}

// injectRange is where item i of p's inject was written: the item, else
// the plugin block (when inject came from the declaration).
func (p Plugin) injectRange(i int) hcl.Range {
	if b := p.source().body; b != nil {
		return itemRange(b, "inject", i, p.Range)
	}
	return p.Range
}

// checkConfig validates p's config against its declared schema; a string
// of format "approval-route" must name one of routes or "caller".
func checkConfig(p Plugin, schema json.RawMessage, routes []Approval) hcl.Diagnostics {
	if len(bytes.TrimSpace(schema)) == 0 {
		return nil
	}
	invalidSchema := func(err error) hcl.Diagnostics {
		return hcl.Diagnostics{errorAt(p.Range, "Invalid config schema",
			"Plugin %q declares a config schema that is not a valid JSON Schema: %s.", p.Name, oneLine(err.Error()))}
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		return invalidSchema(err)
	}
	c := jsonschema.NewCompiler()
	// Formats are assertions here, so a plugin can declare "format": "regex" and
	// get a bad pattern reported with its line before anything starts.
	c.AssertFormat()
	c.RegisterFormat(routeFormat(routes))
	// A schema from a plugin must not make the host read files or the
	// network through $ref.
	c.UseLoader(noLoader{})
	loc := "plugin-config:" + url.PathEscape(p.Name)
	if err := c.AddResource(loc, doc); err != nil {
		return invalidSchema(err)
	}
	sch, err := c.Compile(loc)
	if err != nil {
		return invalidSchema(err)
	}
	config := p.Config
	if len(bytes.TrimSpace(config)) == 0 {
		config = json.RawMessage("{}")
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(config))
	if err != nil {
		return hcl.Diagnostics{errorAt(p.ConfigRange, "Invalid config", "Plugin %q has a config that is not JSON: %v.", p.Name, err)}
	}
	err = sch.Validate(inst)
	var ve *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &ve) {
		return hcl.Diagnostics{errorAt(p.ConfigRange, "Invalid config", "Plugin %q: %v.", p.Name, err)}
	}
	src := p.source().config
	var diags hcl.Diagnostics
	var walk func(e *jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if names, ok := oneOfRequired(e); ok {
			diags = append(diags, errorAt(locate(src, e.InstanceLocation, p.ConfigRange), "Invalid plugin config",
				"Plugin %q: %s needs one of %s.", p.Name, describePointer(e.InstanceLocation), strings.Join(names, ", ")))
			return
		}
		if len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		if k, ok := e.ErrorKind.(*kind.Format); ok && k.Want == RouteFormat {
			diags = append(diags, unknownRoute(p, src, inst, e.InstanceLocation, k.Got, routes))
			return
		}
		if k, ok := e.ErrorKind.(*kind.AdditionalProperties); ok {
			// One diagnostic per key, at the key itself.
			for _, prop := range k.Properties {
				loc := append(slices.Clone(e.InstanceLocation), prop)
				diags = append(diags, errorAt(locate(src, loc, p.ConfigRange), "Invalid plugin config",
					"Plugin %q: %s is not allowed by the plugin's config schema.%s", p.Name, describePointer(loc),
					didYouMean(prop, schemaProperties(doc, e.InstanceLocation))))
			}
			return
		}
		if _, ok := e.ErrorKind.(*kind.FalseSchema); ok {
			msg := "is not allowed by the plugin's config schema"
			if other := excludedBy(e.SchemaURL); other != "" {
				msg = fmt.Sprintf("cannot be set together with %s", other)
			}
			diags = append(diags, errorAt(locate(src, e.InstanceLocation, p.ConfigRange), "Invalid plugin config",
				"Plugin %q: %s %s.", p.Name, describePointer(e.InstanceLocation), msg))
			return
		}
		diags = append(diags, errorAt(locate(src, e.InstanceLocation, p.ConfigRange), "Invalid plugin config",
			"Plugin %q: %s: %s.", p.Name, describePointer(e.InstanceLocation), e.ErrorKind.LocalizedString(messages)))
	}
	walk(ve)
	return diags
}

// oneOfRequired words the schema idiom for "set at least one of these"
// ({"anyOf": [{"required": ["a"]}, {"required": ["b"]}]}) as one problem:
// it returns the names when every cause of an anyOf is a missing property.
func oneOfRequired(e *jsonschema.ValidationError) ([]string, bool) {
	if _, ok := e.ErrorKind.(*kind.AnyOf); !ok || len(e.Causes) == 0 {
		return nil, false
	}
	var names []string
	for _, c := range e.Causes {
		r, ok := c.ErrorKind.(*kind.Required)
		if !ok || len(c.Causes) > 0 {
			return nil, false
		}
		names = append(names, r.Missing...)
	}
	return names, true
}

// excludedBy words the schema idiom for "a excludes b"
// ({"dependentSchemas": {"a": {"properties": {"b": false}}}}): it returns
// "a" when the false schema at schemaURL is such a b.
func excludedBy(schemaURL string) string {
	_, frag, ok := strings.Cut(schemaURL, "#")
	if !ok {
		return ""
	}
	parts := strings.Split(frag, "/")
	n := len(parts)
	if n < 4 || parts[n-4] != "dependentSchemas" || parts[n-2] != "properties" {
		return ""
	}
	return strings.NewReplacer("~1", "/", "~0", "~").Replace(parts[n-3])
}

// noLoader refuses every external $ref.
type noLoader struct{}

func (noLoader) Load(u string) (any, error) {
	return nil, fmt.Errorf("%s: a plugin's config schema cannot refer to other documents", u)
}

// schemaProperties lists the properties the JSON Schema doc declares for
// the object at loc (an instance location), following "properties",
// "items" and "additionalProperties"; nil where it cannot tell.
func schemaProperties(doc any, loc []string) []string {
	node, _ := doc.(map[string]any)
	for _, seg := range loc {
		if node == nil {
			return nil
		}
		props, _ := node["properties"].(map[string]any)
		switch next := props[seg].(type) {
		case map[string]any:
			node = next
			continue
		}
		if items, ok := node["items"].(map[string]any); ok {
			node = items
			continue
		}
		node, _ = node["additionalProperties"].(map[string]any)
	}
	if node == nil {
		return nil
	}
	props, _ := node["properties"].(map[string]any)
	names := make([]string, 0, len(props))
	for name := range props {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}
