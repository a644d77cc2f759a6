package main

import (
	"encoding/json"
	"fmt"
	"path"
	"regexp"
	"strings"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// A deny rule's resources and prompts narrow it to resource reads and
// prompt gets, as tools narrows it to tools:
//
//   - resources: URI patterns of the resources a read (or a subscription)
//     may not read: the server's own URI (the uri argument of a "resource"
//     or "resource_subscribe" entry), where * matches any characters, /
//     included, and ? one;
//   - prompts: name globs (path.Match syntax) of the prompt entries
//     (PREFIX_prompts.NAME) a get may not get.
//
// A rule with either applies to no tool call. Without further checks
// (path_prefix, pattern, url_hosts) a match denies; with them, they decide.

// uriPattern is a compiled resources entry.
type uriPattern struct {
	written string
	re      *regexp.Regexp
}

// compileURIPattern reads p: * for any run of characters, ? for one, the
// rest literal.
func compileURIPattern(p string) (uriPattern, error) {
	if p == "" {
		return uriPattern{}, fmt.Errorf("resources has an empty entry")
	}
	var b strings.Builder
	b.WriteString(`^`)
	for _, r := range p {
		switch r {
		case '*':
			b.WriteString(`.*`)
		case '?':
			b.WriteString(`.`)
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString(`$`)
	re, err := regexp.Compile(b.String())
	if err != nil {
		return uriPattern{}, fmt.Errorf("resources %q: %w", p, err)
	}
	return uriPattern{written: p, re: re}, nil
}

// compileOfferings adds r's resources and prompts to c.
func compileOfferings(c *rule, r Rule) []error {
	var errs []error
	for _, p := range r.Resources {
		u, err := compileURIPattern(p)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		c.resources = append(c.resources, u)
	}
	for _, g := range r.Prompts {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			errs = append(errs, fmt.Errorf("prompts %q is not a valid glob pattern (path.Match syntax: *, ?, [a-z], \\ escapes)", g))
		}
	}
	c.prompts = r.Prompts
	if len(c.resources) > 0 || len(c.prompts) > 0 {
		// The host's interest filter knows tool names only.
		c.exact = false
	}
	return errs
}

// narrowed reports whether the rule has resources or prompts.
func (r *rule) narrowed() bool { return len(r.resources) > 0 || len(r.prompts) > 0 }

// matchOffering says what of call the rule's resources or prompts match
// ("" and false when none does, or the call is neither a read nor a get).
// A read whose arguments cannot be read is matched, so that the rule fails
// closed.
func (r *rule) matchOffering(call *sdk.Call) (string, bool) {
	switch call.Tool.Kind {
	case sdk.KindResource, sdk.KindResourceSubscribe:
		if len(r.resources) == 0 {
			return "", false
		}
		var args struct {
			URI *string `json:"uri"`
		}
		if err := json.Unmarshal(call.Arguments, &args); err != nil || args.URI == nil {
			return fmt.Sprintf("the read of %s names no URI the rule can check", call.Name), true
		}
		for _, p := range r.resources {
			if p.re.MatchString(*args.URI) {
				return fmt.Sprintf("resource %q matches %q", r.quote(*args.URI), p.written), true
			}
		}
	case sdk.KindPrompt:
		for _, g := range r.prompts {
			if ok, _ := path.Match(g, call.Name); ok {
				return fmt.Sprintf("prompt %q matches %q", call.Name, g), true
			}
		}
	}
	return "", false
}
