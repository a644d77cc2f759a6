package deployment

// A plugin block's shadow blocks: which of the plugin's stage-1 listeners
// and guards are evaluated without their Deny, Ask or failure applied (the
// host records what they would have decided), and for whom they are
// enforced all the same (a canary).

import (
	"slices"
	"strings"

	"github.com/hashicorp/hcl/v2"
)

// Shadow is one shadow block of a plugin.
type Shadow struct {
	// Rules names the rules in shadow, as the plugin names them in its
	// answers (a safety rule's name); empty puts every stage-1 listener
	// and guard of the plugin in shadow, its failures included.
	Rules []string
	// EnforceFor selects the principals for whom the rules are enforced
	// (a canary: "group:canary"); empty shadows them for everyone.
	EnforceFor []string
	// Range is the block's header.
	Range hcl.Range
}

type shadowSyntax struct {
	Rules      *[]string `hcl:"rules,optional"`
	EnforceFor *[]string `hcl:"enforce_for,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

// shadows checks a plugin's shadow blocks: a rule in one block at most, a
// block for the whole plugin alone, and no whole plugin in shadow that is
// critical (while a critical plugin is down every call is denied, which
// its shadow would not undo).
func (p *parser) shadows(pl *Plugin, list []shadowSyntax) {
	whole := -1
	seen := map[string]hcl.Range{}
	for i := range list {
		ss := &list[i]
		p.names(ss.Body, ss, "the shadow block")
		sh := Shadow{Range: ss.DefRange}
		if ss.Rules != nil && p.decoded(ss.Body, "rules") {
			sh.Rules = p.nameList(ss.Body, "rules", *ss.Rules, ss.DefRange, "rule")
			if len(sh.Rules) == 0 {
				p.errorf(valueRange(ss.Body, "rules", ss.DefRange), "Invalid rules",
					"rules = [] puts nothing in shadow: name the rules, or leave rules out to put every listener of plugin %q in shadow.", pl.Name)
			}
			for j, r := range sh.Rules {
				if prev, dup := seen[r]; dup && r != "" {
					p.errorf(itemRange(ss.Body, "rules", j, ss.DefRange), "Duplicate rule",
						"Rule %q is already in the shadow block at %s; a rule is in one shadow block.", r, at(prev))
				}
				seen[r] = ss.DefRange
			}
		} else {
			if whole >= 0 || len(list) > 1 {
				p.errorf(ss.DefRange, "Shadow block for the whole plugin",
					"A shadow block without rules puts every listener of plugin %q in shadow, so it is the plugin's only shadow block.", pl.Name)
			}
			whole = i
			if pl.Critical {
				p.errorf(ss.DefRange, "Critical plugin in shadow",
					"Plugin %q is critical: while it is down every call is denied, which shadow mode cannot undo. Drop critical = true, or name the rules to put in shadow.", pl.Name)
			}
		}
		if ss.EnforceFor != nil && p.decoded(ss.Body, "enforce_for") {
			for j, sel := range *ss.EnforceFor {
				if !validSelector(sel) {
					p.errorf(itemRange(ss.Body, "enforce_for", j, ss.DefRange), "Invalid enforce_for",
						`%q is not a principal selector: write "*", KIND:ID ("user:alice", "local:root") or KEY:VALUE ("group:canary").`, sel)
				}
			}
			sh.EnforceFor = slices.Clone(*ss.EnforceFor)
		}
		pl.Shadow = append(pl.Shadow, sh)
	}
}

// validSelector reports whether s selects principals as
// identity.Principal.Matches reads it.
func validSelector(s string) bool {
	if s == "*" {
		return true
	}
	k, v, ok := strings.Cut(s, ":")
	return ok && strings.TrimSpace(k) != "" && strings.TrimSpace(v) != ""
}
