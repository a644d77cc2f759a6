package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/plugkit-go/plugkit/shared/sdk"
	"github.com/plugkit-go/plugkit/shared/secrets"
)

// policy is a compiled configuration: what Apply registers.
type policy struct {
	// guards holds the secrets guard, when arguments = "deny", then one
	// guard per deny rule, in file order.
	guards []sdk.Guard
	// ask is the stage-1 filter of ask_destructive and of the secrets
	// block's arguments check, nil when neither needs one.
	ask *sdk.PreExecuteListener
	// review is the secrets block's stage-4 filter, nil when results = "off"
	// or there is no secrets block.
	review *sdk.PostExecuteListener
}

// rule is a compiled deny rule.
type rule struct {
	name   string
	reason string
	// tools are the rule's tool-name globs; empty means every tool.
	tools []string
	// exact is set when no entry of tools has glob syntax: then the host's
	// interest filter can skip the guard's RPC for every other tool.
	exact bool
	// arguments are the arguments the rule inspects, as written; empty
	// means path for path_prefix and every argument for pattern.
	arguments []string
	prefixes  []prefix
	patterns  []*regexp.Regexp
	// urlHosts, when set (hasURLHosts), are the hosts a URL in an
	// argument may name (urls.go).
	urlHosts    []string
	hasURLHosts bool
	// resources and prompts narrow the rule to resource reads and prompt
	// gets (offerings.go).
	resources []uriPattern
	prompts   []string
	// callers and notCallers select the principals the rule applies to
	// (sdk.Principal.Matches); empty callers means everyone.
	callers, notCallers []string
	// shadow: the rule is in shadow mode (mode = "shadow"), enforced for
	// the principals enforceFor selects; the host applies it.
	shadow     bool
	enforceFor []string
	// scan hides credentials in the values a reason quotes.
	scan *secrets.Scanner
	// ask marks an ask rule, whose match is a question rather than a
	// denial; route is the approval route it names ("" for the host's
	// choice).
	ask   bool
	route string
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
	sp, problems := compileSecrets(cfg.Secrets)
	scan := secrets.New(nil)
	if sp != nil {
		scan = sp.scan
	}
	seen := map[string]bool{}
	pol := &policy{}
	if sp != nil && sp.arguments == argumentsDeny {
		pol.guards = append(pol.guards, sp.guard())
	}
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
		c.scan = scan
		for _, err := range errs {
			problems = append(problems, where+": "+err.Error())
		}
		if len(errs) == 0 {
			pol.guards = append(pol.guards, c.guard())
		}
	}
	var asks []*rule
	for i, r := range cfg.Ask {
		where := fmt.Sprintf("ask %q", r.Name)
		if strings.TrimSpace(r.Name) == "" {
			where = fmt.Sprintf("ask rule #%d", i+1)
			problems = append(problems, where+": it has no name: give the block a label, ask \"name\" { ... }")
		} else if seen[r.Name] {
			problems = append(problems, where+": a second rule has this name; rule names must be unique")
		}
		seen[r.Name] = true
		c, errs := compileRule(r.Rule)
		c.scan, c.ask, c.route = scan, true, r.Approval
		for _, err := range errs {
			problems = append(problems, where+": "+err.Error())
		}
		asks = append(asks, c)
	}
	if len(problems) > 0 {
		return nil, errors.New("config: " + strings.Join(problems, "; "))
	}
	// The secrets check joins stage 1 for ask, which only stage 1 can do,
	// and for deny when ask_destructive is on: the call is then denied
	// before anyone is asked about it (the guard still decides).
	askSecrets := sp != nil && (sp.arguments == argumentsAsk || sp.arguments == argumentsDeny && cfg.AskDestructive)
	if cfg.AskDestructive || askSecrets || len(asks) > 0 {
		var check *secretsPolicy
		if askSecrets {
			check = sp
		}
		pol.ask = &sdk.PreExecuteListener{Name: "ask", Filter: preExecute(cfg.AskDestructive, check, asks, scan)}
	}
	if sp != nil && sp.results != modeOff {
		pol.review = &sdk.PostExecuteListener{Name: secretsName, Filter: sp.review}
	}
	return pol, nil
}

func compileRule(r Rule) (*rule, []error) {
	var errs []error
	c := &rule{name: r.Name, reason: r.Reason, tools: r.Tools, exact: len(r.Tools) > 0, arguments: r.Arguments,
		callers: r.Callers, notCallers: r.NotCallers, shadow: r.Mode == "shadow", enforceFor: r.EnforceFor}
	switch r.Mode {
	case "", "enforce", "shadow":
	default:
		errs = append(errs, fmt.Errorf(`mode %q: want "enforce" or "shadow"`, r.Mode))
	}
	if len(r.EnforceFor) > 0 && r.Mode != "shadow" {
		errs = append(errs, errors.New(`enforce_for is a canary of a rule in shadow: set mode = "shadow" too`))
	}
	for _, sel := range slices.Concat(r.Callers, r.NotCallers, r.EnforceFor) {
		if sel != "*" && !strings.Contains(sel, ":") {
			errs = append(errs, fmt.Errorf(`caller %q is not a selector: write "*", KIND:ID ("user:alice", "local:root") or KEY:VALUE ("group:readers")`, sel))
		}
	}
	for _, g := range r.Tools {
		if _, err := path.Match(g, ""); err != nil || g == "" {
			errs = append(errs, fmt.Errorf("tools %q is not a valid glob pattern (path.Match syntax: *, ?, [a-z], \\ escapes)", g))
		}
		if strings.ContainsAny(g, `*?[\`) {
			c.exact = false
		}
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
	if r.URLHosts != nil {
		c.hasURLHosts = true
		for _, h := range r.URLHosts {
			norm, err := urlHostEntry(h)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			c.urlHosts = append(c.urlHosts, norm)
		}
	}
	errs = append(errs, compileOfferings(c, r)...)
	switch {
	case len(r.Tools) == 0 && len(r.PathPrefix) == 0 && len(r.Pattern) == 0 && r.URLHosts == nil && len(r.Resources) == 0 && len(r.Prompts) == 0:
		// Denying every call is possible, but must be written on purpose.
		errs = append(errs, errors.New(`the rule denies nothing in particular: set tools, path_prefix, pattern, url_hosts, resources or prompts (tools = ["*"] denies every tool)`))
	case len(r.Arguments) > 0 && len(r.PathPrefix) == 0 && len(r.Pattern) == 0 && r.URLHosts == nil:
		errs = append(errs, errors.New(`arguments is set but there is no path_prefix, pattern or url_hosts to inspect them with`))
	}
	return c, errs
}

// guard is the rule as a stage-2 guard.
func (r *rule) guard() sdk.Guard {
	g := sdk.Guard{Name: r.name, Check: r.check, Shadow: r.shadow, EnforceFor: r.enforceFor}
	if r.exact {
		g.Tools = r.tools
	}
	return g
}

// check returns a reason to deny call, or "". It never trusts the interest
// filter alone: a host that ignored it must not widen the rule.
func (r *rule) check(_ context.Context, call *sdk.Call) (string, error) {
	tool, ok := r.matchTool(call.Name)
	if !ok || !r.appliesTo(call.Principal) {
		// Decided by the tool's name and the principal alone: in the
		// visibility question, a pass for any arguments.
		call.ForAnyArguments()
		return "", nil
	}
	if r.narrowed() {
		if call.Visibility() && (call.Tool.Kind == sdk.KindResource || call.Tool.Kind == sdk.KindResourceSubscribe) {
			// The visibility question names no URI: some URIs pass a
			// rule that matches them, so it cannot deny every read.
			return "", nil
		}
		what, ok := r.matchOffering(call)
		if !ok {
			return "", nil
		}
		if len(r.prefixes) == 0 && len(r.patterns) == 0 && !r.hasURLHosts {
			return r.deny(what, call.Principal), nil
		}
	} else if len(r.prefixes) == 0 && len(r.patterns) == 0 && !r.hasURLHosts {
		// A tools-only rule (compile refuses a rule with neither tools nor
		// checks, so tool is set).
		return r.deny(fmt.Sprintf("tool %q matches %q", call.Name, tool), call.Principal), nil
	}
	if call.Visibility() {
		// The visibility question has no arguments: some arguments pass
		// a rule that inspects them (no string at all does), so it cannot
		// deny every call.
		return "", nil
	}
	var args map[string]json.RawMessage
	if err := json.Unmarshal(call.Arguments, &args); err != nil {
		// Arguments that are not an object cannot be inspected; the error
		// denies the call (guards fail closed).
		return "", fmt.Errorf("safety rule %q cannot inspect the arguments of %s: %w", r.name, call.Name, err)
	}
	if len(r.prefixes) > 0 {
		names := r.arguments
		if len(names) == 0 {
			names = []string{"path"}
		}
		if why := r.inspect(args, names, r.underPrefix); why != "" {
			return r.deny(why, call.Principal), nil
		}
	}
	if len(r.patterns) > 0 {
		names := r.arguments
		if len(names) == 0 {
			names = slices.Sorted(maps.Keys(args))
		}
		if why := r.inspect(args, names, r.matchPattern); why != "" {
			return r.deny(why, call.Principal), nil
		}
	}
	if r.hasURLHosts {
		names := r.arguments
		if len(names) == 0 {
			names = slices.Sorted(maps.Keys(args))
		}
		if why := r.inspect(args, names, r.foreignURL); why != "" {
			return r.deny(why, call.Principal), nil
		}
	}
	return "", nil
}

// inspect applies match to every string under each named argument, nested
// in objects and arrays too, and says why the first one it refuses is
// refused, naming it by its path ("path", "files/0/name").
func (r *rule) inspect(args map[string]json.RawMessage, names []string, match func(string) string) string {
	for _, name := range names {
		raw, ok := args[name]
		if !ok {
			continue
		}
		var v any
		dec := json.NewDecoder(strings.NewReader(string(raw)))
		dec.UseNumber()
		if dec.Decode(&v) != nil {
			continue
		}
		if why := walkStrings(v, escapePointer(name), match); why != "" {
			return why
		}
	}
	return ""
}

// walkStrings calls match on each string in v, object keys in sorted
// order, until one refuses it.
func walkStrings(v any, at string, match func(string) string) string {
	switch v := v.(type) {
	case string:
		if why := match(v); why != "" {
			return at + " " + why
		}
	case []any:
		for i, item := range v {
			if why := walkStrings(item, fmt.Sprintf("%s/%d", at, i), match); why != "" {
				return why
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if why := walkStrings(v[k], at+"/"+escapePointer(k), match); why != "" {
				return why
			}
		}
	}
	return ""
}

// escapePointer escapes one JSON Pointer token (RFC 6901).
func escapePointer(tok string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(tok)
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

// underPrefix says why the argument value v is denied by a path prefix,
// or "". Prefixes compare the cleaned path, so "a/../secrets/x" and
// "./secrets//x" are under "secrets".
func (r *rule) underPrefix(v string) string {
	clean := path.Clean(v)
	for _, p := range r.prefixes {
		if under(clean, p.clean) {
			return fmt.Sprintf("%q is under %q", r.quote(v), p.written)
		}
	}
	return ""
}

// matchPattern says why the argument value v is denied by a pattern, or
// "". Patterns see the value as written and cleaned (as a path), and
// either denies.
func (r *rule) matchPattern(v string) string {
	clean := path.Clean(v)
	for _, re := range r.patterns {
		if re.MatchString(v) || (clean != v && re.MatchString(clean)) {
			return fmt.Sprintf("%q matches %q", r.quote(v), re.String())
		}
	}
	return ""
}

// quote is v for a reason: credentials replaced by their markers, then cut
// short.
func (r *rule) quote(v string) string {
	if r.scan != nil {
		v, _ = r.scan.Redact(v)
	}
	return brief(v, 120)
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

// appliesTo reports whether the rule is about calls made for p: one of
// callers names p (when there are callers) and none of notCallers does.
func (r *rule) appliesTo(p sdk.Principal) bool {
	if len(r.callers) > 0 && !slices.ContainsFunc(r.callers, p.Matches) {
		return false
	}
	return !slices.ContainsFunc(r.notCallers, p.Matches)
}

// deny builds the reason: always the rule's name, then the operator's
// reason if there is one, and what matched; a rule about some callers also
// says whom the call was for.
func (r *rule) deny(what string, p sdk.Principal) string {
	if len(r.callers) > 0 || len(r.notCallers) > 0 {
		what += ", for " + p.String()
	}
	if r.ask {
		if r.reason == "" {
			return fmt.Sprintf("safety rule %q asks: %s", r.name, what)
		}
		return fmt.Sprintf("safety rule %q asks: %s (%s)", r.name, r.reason, what)
	}
	if r.reason == "" {
		return fmt.Sprintf("denied by safety rule %q: %s", r.name, what)
	}
	return fmt.Sprintf("denied by safety rule %q: %s (%s)", r.name, r.reason, what)
}

// brief shortens s to at most n runes for a message, marking the cut.
func brief(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	runes := []rune(s)
	return string(runes[:n]) + "…"
}
