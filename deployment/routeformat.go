package deployment

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// RouteFormat is the JSON Schema format a plugin's config schema gives a
// string that names an approval route (the safety plugin's ask rules'
// approval attribute): Check refuses a value that is neither a route the
// deployment declares nor CallerRoute, at the value's line.
const RouteFormat = "approval-route"

// routeFormat asserts RouteFormat against the deployment's routes.
func routeFormat(routes []Approval) *jsonschema.Format {
	return &jsonschema.Format{Name: RouteFormat, Validate: func(v any) error {
		s, ok := v.(string)
		if !ok || s == CallerRoute || RouteNamed(routes, s) != nil {
			// Not a string: the schema's type says so, not the format.
			return nil
		}
		return errors.New("no such route")
	}}
}

// unknownRoute is the diagnostic of a config value at loc naming the
// route got, which the deployment does not declare. It names the rule
// (the enclosing object's "name", as a labelled block is handed over) when
// there is one.
func unknownRoute(p Plugin, src map[string]hcl.Range, inst any, loc []string, got any, routes []Approval) *hcl.Diagnostic {
	where := describePointer(loc)
	if rule := enclosingName(inst, loc); rule != "" {
		where = fmt.Sprintf("rule %q (%s)", rule, where)
	}
	names := make([]string, 0, len(routes)+1)
	for _, r := range routes {
		names = append(names, fmt.Sprintf("%q", r.Name))
	}
	names = append(names, fmt.Sprintf("%q for the calling client", CallerRoute))
	return errorAt(locate(src, loc, p.ConfigRange), "Unknown approval route",
		"Plugin %q: %s names approval route %q, which the deployment does not declare; declare an approval %q block or name one of %s.",
		p.Name, where, got, got, strings.Join(names, ", "))
}

// enclosingName is the "name" member of the object holding the value at
// loc in inst, or "".
func enclosingName(inst any, loc []string) string {
	if len(loc) == 0 {
		return ""
	}
	v := inst
	for _, tok := range loc[:len(loc)-1] {
		switch x := v.(type) {
		case map[string]any:
			v = x[tok]
		case []any:
			var i int
			if _, err := fmt.Sscan(tok, &i); err != nil || i < 0 || i >= len(x) {
				return ""
			}
			v = x[i]
		default:
			return ""
		}
	}
	if m, ok := v.(map[string]any); ok {
		if s, ok := m["name"].(string); ok {
			return s
		}
	}
	return ""
}
