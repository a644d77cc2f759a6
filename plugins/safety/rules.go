package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"unicode/utf8"

	"github.com/plugkit-go/plugkit/shared/sdk"
)

// policy is a compiled configuration: what Apply registers.
type policy struct {
	// guards holds one guard per deny rule, in file order.
	guards []sdk.Guard
	// ask is the ask_destructive listener, nil when it is off.
	ask *sdk.PreExecuteListener
}

// rule is a compiled deny rule.
type rule struct {
	name   string
	reason string
	// tools are the rule's tool-name globs; empty means every tool.
	tools []string
	// exact is set when no entry of tools has glob syntax: then the host's
	// interest filter can skip the guard's RPC for every other tool.
	exact     bool
	arguments []string
	prefixes  []prefix
	patterns  []*regexp.Regexp
}

// prefix is a path_prefix entry: as written, for the reason, and cleaned,
// for the comparison.
type prefix struct {
	written, clean string
}

// compile checks and compiles cfg. Every problem is reported, each naming
// its rule and field, on one line, which is how the host shows an apply
// error. The host has usually refused these already through configSchema;
// this check is for a host that did not validate, and for what a schema
// cannot say (two rules with one name).
func compile(cfg Config) (*policy, error) {
	var problems []string
	seen := map[string]bool{}
	pol := &policy{}
	for i, r := range cfg.Deny {
		where := fmt.Sprintf("deny %q", r.Name)
		if strings.TrimSpace(r.Name) == "" {
			where = fmt.Sprintf("deny rule #%d", i+1)
			problems = append(problems, where+": it has no name: give the block a label, deny \"name\" { ... }")
		} else if seen[r.Name] {
			problems = append(problems, where+": a second rule has this name; rule names must be unique")
		}
		seen[r.Name] = true
		c, errs := compileRule(r)
		for _, err := range errs {
			problems = append(problems, where+": "+err.Error())
		}
		if len(errs) == 0 {
			pol.guards = append(pol.guards, c.guard())
		}
	}
	if len(problems) > 0 {
		return nil, errors.New("config: " + strings.Join(problems, "; "))
	}
	if cfg.AskDestructive {
		pol.ask = &sdk.PreExecuteListener{Name: "ask_destructive", Filter: askDestructive}
	}
	return pol, nil
}

func compileRule(r Rule) (*rule, []error) {
	var errs []error
	c := &rule{name: r.Name, reason: r.Reason, tools: r.Tools, exact: len(r.Tools) > 0, arguments: r.Arguments}
	for _, g := range r.Tools {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			errs = append(errs, fmt.Errorf("tools %q is not a valid glob pattern (path.Match syntax: *, ?, [a-z], \\ escapes)", g))
		}
		if strings.ContainsAny(g, `*?[\`) {
			c.exact = false
		}
	}
	if len(c.arguments) == 0 {
		c.arguments = []string{"path"}
	}
	for _, a := range r.Arguments {
		if a == "" {
			errs = append(errs, errors.New(`arguments has an empty name`))
		}
	}
	for _, p := range r.PathPrefix {
		if p == "" {
			errs = append(errs, errors.New(`path_prefix has an empty entry`))
			continue
		}
		c.prefixes = append(c.prefixes, prefix{written: p, clean: path.Clean(p)})
	}
	for _, p := range r.Pattern {
		re, err := regexp.Compile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("pattern %q is not a valid Go regular expression: %s", p, strings.TrimPrefix(err.Error(), "error parsing regexp: ")))
			continue
		}
		c.patterns = append(c.patterns, re)
	}
	switch {
	case len(r.Tools) == 0 && len(r.PathPrefix) == 0 && len(r.Pattern) == 0:
		// Denying every call is possible, but must be written on purpose.
		errs = append(errs, errors.New(`the rule denies nothing in particular: set tools, path_prefix or pattern (tools = ["*"] denies every tool)`))
	case len(r.Arguments) > 0 && len(r.PathPrefix) == 0 && len(r.Pattern) == 0:
		errs = append(errs, errors.New(`arguments is set but there is no path_prefix or pattern to inspect them with`))
	}
	return c, errs
}

// guard is the rule as a stage-2 guard.
func (r *rule) guard() sdk.Guard {
	g := sdk.Guard{Name: r.name, Check: r.check}
	if r.exact {
		g.Tools = r.tools
	}
	return g
}

// check returns a reason to deny call, or "". It never trusts the interest
// filter alone: a host that ignored it must not widen the rule.
func (r *rule) check(_ context.Context, call *sdk.Call) (string, error) {
	tool, ok := r.matchTool(call.Name)
	if !ok {
		return "", nil
	}
	if len(r.prefixes) == 0 && len(r.patterns) == 0 {
		// A tools-only rule (compile refuses a rule with neither tools nor
		// checks, so tool is set).
		return r.deny(fmt.Sprintf("tool %q matches %q", call.Name, tool)), nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(call.Arguments, &args); err != nil {
		// Arguments that are not an object cannot be inspected; the error
		// denies the call (guards fail closed).
		return "", fmt.Errorf("safety rule %q cannot inspect the arguments of %s: %w", r.name, call.Name, err)
	}
	for _, name := range r.arguments {
		for _, v := range stringsIn(args[name]) {
			if why := r.matchValue(v); why != "" {
				return r.deny(fmt.Sprintf("%s %s", name, why)), nil
			}
		}
	}
	return "", nil
}

// matchTool reports whether the rule applies to the tool called name, and
// which glob matched ("" when the rule applies to every tool).
func (r *rule) matchTool(name string) (string, bool) {
	if len(r.tools) == 0 {
		return "", true
	}
	for _, g := range r.tools {
		if ok, _ := path.Match(g, name); ok {
			return g, true
		}
	}
	return "", false
}

// matchValue says why the argument value v is denied, or "". Prefixes
// compare the cleaned path, so "a/../secrets/x" and "./secrets//x" are
// under "secrets"; patterns see the value as written and cleaned, and
// either denies.
func (r *rule) matchValue(v string) string {
	clean := path.Clean(v)
	for _, p := range r.prefixes {
		if under(clean, p.clean) {
			return fmt.Sprintf("%q is under %q", brief(v, 120), p.written)
		}
	}
	for _, re := range r.patterns {
		if re.MatchString(v) || (clean != v && re.MatchString(clean)) {
			return fmt.Sprintf("%q matches %q", brief(v, 120), re.String())
		}
	}
	return ""
}

// under reports whether the cleaned path p is prefix or inside it. Whole
// path elements are compared, so "/etc" covers "/etc" and "/etc/passwd" but
// not "/etcetera"; "/" covers every absolute path and "." every relative
// path that does not climb out with "..".
func under(p, prefix string) bool {
	switch prefix {
	case "/":
		return strings.HasPrefix(p, "/")
	case ".":
		return !strings.HasPrefix(p, "/") && p != ".." && !strings.HasPrefix(p, "../")
	}
	return p == prefix || strings.HasPrefix(p, prefix+"/")
}

// deny builds the reason: always the rule's name, then the operator's
// reason if there is one, and what matched.
func (r *rule) deny(what string) string {
	if r.reason == "" {
		return fmt.Sprintf("denied by safety rule %q: %s", r.name, what)
	}
	return fmt.Sprintf("denied by safety rule %q: %s (%s)", r.name, r.reason, what)
}

// stringsIn returns the strings an argument holds: itself if it is a
// string, its string items if it is an array (a list of paths); nothing
// otherwise.
func stringsIn(raw json.RawMessage) []string {
	if len(raw) == 0 {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}
	}
	var items []json.RawMessage
	if json.Unmarshal(raw, &items) != nil {
		return nil
	}
	var out []string
	for _, it := range items {
		if json.Unmarshal(it, &s) == nil {
			out = append(out, s)
		}
	}
	return out
}

// brief shortens s to at most n runes for a message, marking the cut.
func brief(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n]) + "…"
}
