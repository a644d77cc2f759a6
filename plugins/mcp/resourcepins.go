package main

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A resource's definition (name, title, description, MIME type) is what a
// model reads before it reads the resource: as much an injection vector as
// a tool description. Each resource and each resource template is checked
// as a tool is, and pinned by host lock under the key "resource:URI" or
// "template:URI-TEMPLATE":
//
//   - at registration the bridge lists them once, and the list entry's
//     Definition carries one "tool=KEY PIN" line each after its first
//     line, which host lock reads (cmd/host/lock.go);
//   - every list checks them again, as the server gives them then: one
//     whose definition changed since it was locked, one the pins do not
//     know under pin = "strict", or one whose description fails a check
//     under descriptions = "block" is left out of the list, and a read of
//     its URI (or of a URI its template expands to) is refused with the
//     reason. The list entry's notes (host tools) say which and why.

const (
	resourcePinPrefix = "resource:"
	templatePinPrefix = "template:"
)

// resourceParts are the parts of a resource's or template's definition,
// in pin order.
var resourceParts = []string{"name", "title", "description", "mimeType"}

func resourceDefinition(name, title, description, mime string) definition {
	d := definition{}
	parts := map[string]any{"name": name, "title": title, "description": description, "mimeType": mime}
	for _, k := range resourceParts {
		d[k] = digest(parts[k])
	}
	return d
}

// resourceCheck is what the checks found in one list.
type resourceCheck struct {
	kept  *resourceList
	held  map[string]string // pin key → why it is held
	notes []string          // for the list entry: flagged and held ones
	pins  []string          // "tool=KEY PIN" lines, for host lock
}

// checkResources checks every resource and template of l.
func (b *bridge) checkResources(l *resourceList) resourceCheck {
	c := resourceCheck{kept: &resourceList{Resources: []*mcp.Resource{}, Templates: []*mcp.ResourceTemplate{}}, held: map[string]string{}}
	check := func(key, name, title, desc, mime string) bool {
		def := resourceDefinition(name, title, desc, mime)
		c.pins = append(c.pins, wireDefinition(key, def))
		var why []string
		flags := scanTool(&mcp.Tool{Name: name, Title: title, Description: desc})
		for _, f := range flags {
			c.notes = append(c.notes, key+": "+f.String())
		}
		if len(flags) > 0 && b.set.trust.block {
			why = append(why, fmt.Sprintf("description failed the check %s (descriptions = \"block\")", flags[0].rule))
		}
		if w := b.set.trust.pinHeld(key, def); w != "" {
			why = append(why, w)
		}
		if len(why) == 0 {
			return true
		}
		c.held[key] = strings.Join(why, "; ")
		c.notes = append(c.notes, key+" held absent: "+c.held[key])
		return false
	}
	for _, r := range l.Resources {
		if check(resourcePinPrefix+r.URI, r.Name, r.Title, r.Description, r.MIMEType) {
			c.kept.Resources = append(c.kept.Resources, r)
		}
	}
	for _, t := range l.Templates {
		if check(templatePinPrefix+t.URITemplate, t.Name, t.Title, t.Description, t.MIMEType) {
			c.kept.Templates = append(c.kept.Templates, t)
		}
	}
	slices.Sort(c.pins)
	return c
}

// checkedResources lists the server's resources and templates, checks
// them, and remembers which are held for the reads that follow.
func (b *bridge) checkedResources(ctx context.Context) (*resourceList, error) {
	l, err := b.listResources(ctx)
	if err != nil {
		return nil, err
	}
	c := b.checkResources(l)
	b.mu.Lock()
	b.resourcesHeld = c.held
	b.mu.Unlock()
	return c.kept, nil
}

// heldRead is why a read of uri is refused, "" when it is not: the URI of
// a held resource, or one a held template expands to.
func (b *bridge) heldRead(uri string) string {
	b.mu.Lock()
	defer b.mu.Unlock()
	if why, ok := b.resourcesHeld[resourcePinPrefix+uri]; ok {
		return fmt.Sprintf("resource %s is held absent: %s", uri, why)
	}
	for key, why := range b.resourcesHeld {
		if t, ok := strings.CutPrefix(key, templatePinPrefix); ok && expandsTo(t, uri) {
			return fmt.Sprintf("resource %s (template %s) is held absent: %s", uri, t, why)
		}
	}
	return ""
}

// templateVar is an RFC 6570 expression: {name}, {+path}, {?q,r}, ...
var templateVar = regexp.MustCompile(`\{[^}]*\}`)

// expandsTo says whether uri is an expansion of the URI template t: its
// literal parts in order, each expression standing for any text (none
// included, for query expressions that expand to nothing). Generous on
// purpose: a read it matches by mistake is refused, never let through.
func expandsTo(t, uri string) bool {
	var re strings.Builder
	re.WriteString("^")
	last := 0
	for _, m := range templateVar.FindAllStringIndex(t, -1) {
		re.WriteString(regexp.QuoteMeta(t[last:m[0]]))
		re.WriteString(".*")
		last = m[1]
	}
	re.WriteString(regexp.QuoteMeta(t[last:]))
	re.WriteString("$")
	ok, err := regexp.MatchString(re.String(), uri)
	return err == nil && ok
}

// listDefinition is the list entry's Definition: its first line, then the
// pins of the resources and templates seen at registration.
func listDefinition(first string, c *resourceCheck) string {
	if c == nil || len(c.pins) == 0 {
		return first
	}
	return first + "\n" + strings.Join(c.pins, "\n")
}
