package deployment

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// A plugin's config value of format approval-route must name a route the
// deployment declares, or caller; an unknown one is reported at its line,
// naming the rule that holds it.
func TestCheckApprovalRouteNames(t *testing.T) {
	t.Parallel()
	src := `approval "oncall" {
  approvers = ["group:oncall"]
}

plugin "safety" {
  path = "bin/ok"
  config {
    ask "deploys" {
      approval = "oncall"
    }
    ask "etc" {
      approval = "caller"
    }
    ask "typo" {
      approval = "on-call"
    }
    fallback = "nobody"
    other    = 3
  }
}
`
	answers := fakeDescribe{"safety": {ConfigSchema: json.RawMessage(`{
		"type": "object",
		"properties": {
			"ask": {"type": "array", "items": {"type": "object", "properties": {
				"name": {"type": "string"},
				"approval": {"type": "string", "format": "approval-route"}}}},
			"fallback": {"type": "string", "format": "approval-route"},
			"other": {"format": "approval-route"}
		}}`)}}
	d := parseClean(t, src)
	got := strings.ReplaceAll(Format(Check(testkit.Context(t), d, answers.describe)), d.File, "")
	want := `:15:7: Unknown approval route: Plugin "safety": rule "typo" (config at /ask/2/approval) names approval route "on-call", which the deployment does not declare; declare an approval "on-call" block or name one of "oncall", "caller" for the calling client.
:17:5: Unknown approval route: Plugin "safety": config at /fallback names approval route "nobody", which the deployment does not declare; declare an approval "nobody" block or name one of "oncall", "caller" for the calling client.
`
	if got != want {
		t.Errorf("Check:\n%s\nwant:\n%s", got, want)
	}
}

func TestRouteNamed(t *testing.T) {
	t.Parallel()
	routes := []Approval{{Name: "a", Tools: []string{"x"}}, {Name: "b"}}
	if r := RouteNamed(routes, "b"); r == nil || r.Name != "b" {
		t.Errorf("RouteNamed(b) = %v", r)
	}
	for _, name := range []string{"c", CallerRoute, ""} {
		if r := RouteNamed(routes, name); r != nil {
			t.Errorf("RouteNamed(%q) = %v, want nil", name, r)
		}
	}
	// A route without tools is taken only by name.
	if r := RouteFor(routes, "y"); r != nil {
		t.Errorf("RouteFor(y) = %v", r)
	}
}
