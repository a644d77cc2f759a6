package deployment

import (
	"reflect"
	"strings"
	"testing"
)

// TestShadowBlocks: shadow blocks are read as written; each mistake is
// reported at its place, saying what to write instead.
func TestShadowBlocks(t *testing.T) {
	t.Parallel()
	d := parseClean(t, `
plugin "safety" {
  path     = "bin/ok"
  critical = true
  shadow {
    rules       = ["no_rm", "no_env"]
    enforce_for = ["group:canary", "user:ann"]
  }
  shadow { rules = ["ask_destructive"] }
}
plugin "other" {
  path = "bin/other"
  shadow {}
}
`)
	var got [][2][]string
	for _, p := range d.Plugins {
		for _, sh := range p.Shadow {
			got = append(got, [2][]string{sh.Rules, sh.EnforceFor})
		}
	}
	want := [][2][]string{{{"no_rm", "no_env"}, {"group:canary", "user:ann"}}, {{"ask_destructive"}, nil}, {nil, nil}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("shadow blocks %q, want %q", got, want)
	}

	for _, tc := range []struct{ name, src, want string }{
		{"critical whole plugin", `plugin "p" {
  path = "bin/ok"
  critical = true
  shadow {}
}`, `deploy.hcl:4:3: Critical plugin in shadow: Plugin "p" is critical`},
		{"whole plugin and rules", `plugin "p" {
  path = "bin/ok"
  shadow {}
  shadow { rules = ["a"] }
}`, `deploy.hcl:3:3: Shadow block for the whole plugin: `},
		{"rule twice", `plugin "p" {
  path = "bin/ok"
  shadow { rules = ["a"] }
  shadow { rules = ["b", "a"] }
}`, `deploy.hcl:4:26: Duplicate rule: Rule "a" is already in the shadow block at`},
		{"no rules", `plugin "p" {
  path = "bin/ok"
  shadow { rules = [] }
}`, `deploy.hcl:3:20: Invalid rules: rules = [] puts nothing in shadow`},
		{"bad selector", `plugin "p" {
  path = "bin/ok"
  shadow {
    enforce_for = ["canary"]
  }
}`, `deploy.hcl:4:20: Invalid enforce_for: "canary" is not a principal selector`},
		{"unknown attribute", `plugin "p" {
  path = "bin/ok"
  shadow { mode = "shadow" }
}`, `An argument named "mode" is not allowed in the shadow block.`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, diags := Parse(writeDeployment(t, tc.src))
			if got := Format(diags); !strings.Contains(got, tc.want) {
				t.Fatalf("got:\n%s\nwant it to hold %s", got, tc.want)
			}
		})
	}
}
