package host

import (
	"errors"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/pipeline"
)

// An Ask that names a route takes it, whatever the routes' tools match;
// "caller" is the caller's; an undeclared name denies (never the caller).
func TestRouteNamedByAsk(t *testing.T) {
	a := NewApprovals()
	routes := []deployment.Approval{
		{Name: "deletes", Approvers: []string{"user:bob"}, Tools: []string{"delete_*"}, Timeout: time.Minute},
		{Name: "oncall", Approvers: []string{"group:oncall"}, Timeout: 5 * time.Minute},
	}
	a.routes = func() []deployment.Approval { return routes }
	for _, tc := range []struct{ tool, named, want string }{
		{"delete_file", "", "deletes"},
		{"read_file", "", deployment.CallerRoute},
		{"read_file", "oncall", "oncall"},
		{"delete_file", "oncall", "oncall"},
		{"delete_file", deployment.CallerRoute, deployment.CallerRoute},
	} {
		if got, err := a.RouteOf(tc.tool, tc.named); err != nil || got != tc.want {
			t.Errorf("RouteOf(%s, %q) = %q, %v; want %q", tc.tool, tc.named, got, err, tc.want)
		}
	}
	_, err := a.RouteOf("read_file", "gone")
	var denied *pipeline.ApprovalDenied
	if !errors.As(err, &denied) || denied.Reason != `the Ask names approval route "gone", which the deployment does not declare` {
		t.Errorf("an undeclared route: %v", err)
	}
	if d := a.routeTimeout("read_file", "oncall"); d != 5*time.Minute+routeMargin {
		t.Errorf("timeout of a named route: %s", d)
	}
	if d := a.routeTimeout("read_file", ""); d != 0 {
		t.Errorf("timeout of the caller's route: %s", d)
	}

	x := pipeline.Explanation{Tool: "read_file", Outcome: pipeline.WouldAsk, Route: "oncall", Reason: "sure?", IfApproved: pipeline.WouldRun}
	a.explainRoute(&x)
	if x.Route != "oncall" || len(x.Approvers) != 1 || x.Approvers[0] != "group:oncall" {
		t.Errorf("explained %+v", x)
	}
	x = pipeline.Explanation{Tool: "read_file", Outcome: pipeline.WouldAsk, Route: "gone", Reason: "sure?", IfApproved: pipeline.WouldRun}
	a.explainRoute(&x)
	if x.Outcome != pipeline.WouldDeny || x.IfApproved != "" {
		t.Errorf("explained an undeclared route as %+v", x)
	}
}
