package host

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/plugkit-go/plugkit/approvals"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/pipeline"
)

// routeMargin is how much longer than a route's timeout the pipeline lets
// its Ask run: the service times the request out first, with its own
// reason ("no approval within 15m from group:oncall").
const routeMargin = 30 * time.Second

// Waiting is what a caller is told while its call waits for the approvers
// of a route.
type Waiting struct {
	Request string    `json:"request"`
	Route   string    `json:"route"`
	Who     string    `json:"who"`
	Quorum  int       `json:"quorum"`
	Expires time.Time `json:"expires"`
}

type waitKey struct{}

// WithWaitNotice returns ctx carrying fn: a call made with it that waits
// for a route's approvers tells fn so, once, before it waits. Front ends
// use it to tell their client whom it waits for.
func WithWaitNotice(ctx context.Context, fn func(Waiting)) context.Context {
	return context.WithValue(ctx, waitKey{}, fn)
}

// route is the approval route an Ask about tool takes; nil for the
// caller's. named is the route the Ask named (Decision.Route): it wins
// over the routes' tools patterns; "caller" is the caller's. A name the
// deployment does not declare (a plugin's mistake, or a route a reload
// removed) is an error, which denies the call: it must not fall back to
// the caller, who may be the agent the route was meant to keep out.
func (a *Approvals) route(tool, named string) (*deployment.Approval, error) {
	var routes []deployment.Approval
	if a.routes != nil {
		routes = a.routes()
	}
	switch named {
	case "":
		return deployment.RouteFor(routes, tool), nil
	case deployment.CallerRoute:
		return nil, nil
	}
	if r := deployment.RouteNamed(routes, named); r != nil {
		return r, nil
	}
	return nil, &pipeline.ApprovalDenied{Reason: fmt.Sprintf("the Ask names approval route %q, which the deployment does not declare", named)}
}

// RouteOf is the name of the route an Ask about tool that names route
// (maybe "") takes: a declared route, "caller", or an error when it names
// an undeclared one. host explain reports it.
func (a *Approvals) RouteOf(tool, named string) (string, error) {
	r, err := a.route(tool, named)
	switch {
	case err != nil:
		return "", err
	case r == nil:
		return deployment.CallerRoute, nil
	}
	return r.Name, nil
}

// explainRoute fills in which route an explained Ask would take, by the
// rule the approver applies (route). An Ask naming a route the deployment
// does not declare would be denied, and is explained so.
func (a *Approvals) explainRoute(x *pipeline.Explanation) {
	if x.Outcome != pipeline.WouldAsk {
		return
	}
	r, err := a.route(x.Tool, x.Route)
	switch {
	case err != nil:
		x.Outcome, x.Reason = pipeline.WouldDeny, err.Error()+" (asked: "+x.Reason+")"
		x.IfApproved, x.IfApprovedBy, x.IfApprovedRule, x.IfApprovedReason = "", "", "", ""
	case r == nil:
		x.Route = deployment.CallerRoute
	default:
		x.Route, x.Approvers = r.Name, r.Approvers
	}
}

// routeTimeout is pipeline.Options.ApprovalTimeoutFor.
func (a *Approvals) routeTimeout(tool, named string) time.Duration {
	if r, _ := a.route(tool, named); r != nil {
		return r.Timeout + routeMargin
	}
	return 0
}

// askRoute parks the call until the route's approvers decide, and records
// how they did on the call for its observers (the audit line, the
// receipt).
func (a *Approvals) askRoute(ctx context.Context, e *pipeline.Execution, question string, r *deployment.Approval) (bool, error) {
	route := approvals.Route{Name: r.Name, Approvers: r.Approvers, Quorum: r.Quorum, Timeout: r.Timeout}
	notify, _ := ctx.Value(waitKey{}).(func(Waiting))
	call := approvals.Call{ID: e.ID(), Tool: e.Name(), Arguments: e.ArgumentsJSON(), Principal: e.Principal(), Caller: e.Caller(), Question: question}
	req, err := a.Service.Ask(ctx, route, call, func(req approvals.Request) {
		if notify != nil {
			notify(Waiting{Request: req.ID, Route: req.Route, Who: route.Who(), Quorum: req.Quorum, Expires: req.Expires})
		}
	})
	if rec, jerr := json.Marshal(req.Record()); jerr == nil {
		e.SetApproval(string(rec))
	}
	switch {
	case err != nil:
		return false, err
	case req.State == approvals.Approved:
		return true, nil
	case req.State == approvals.TimedOut:
		return false, &pipeline.ApprovalDenied{Reason: req.Reason, TimedOut: true}
	default:
		return false, &pipeline.ApprovalDenied{Reason: req.Reason}
	}
}

// routeApprovals points the approver at the deployment's routes, as last
// loaded (a reload changes them for the next Ask), and feeds the metrics
// and the log from its requests.
func (h *Host) routeApprovals() error {
	a := h.Approvals
	a.routes = func() []deployment.Approval { return h.deployment().Approvals }
	for _, r := range h.Deployment.Approvals {
		if w := r.Webhook; w != nil && os.Getenv(w.SecretEnv) == "" {
			return fmt.Errorf("approval %q: webhook secret_env %s is not set (or empty) in the host's environment", r.Name, w.SecretEnv)
		}
	}
	a.notifier = approvals.NewNotifier()
	svc, store, err := approvalService(h.Deployment.Host, approvals.Events{
		Created: func(r approvals.Request) {
			h.Metrics.ApprovalRequested(r.Route)
			h.log.Info("call waiting for approval", "request", r.ID, "call", r.CallID, "tool", r.Tool, "route", r.Route, "principal", r.Principal)
			h.notify(r)
		},
		Ended: func(r approvals.Request) {
			h.Metrics.ApprovalEnded(r.Route, r.State, r.Decided.Sub(r.Created))
			h.log.Info("approval request ended", "request", r.ID, "call", r.CallID, "state", r.State, "reason", r.Reason)
		},
		Abandoned: func(r approvals.Request) {
			h.Metrics.ApprovalAbandoned(r.Route)
			h.log.Warn("approval request abandoned", "request", r.ID, "call", r.CallID, "holder", r.Holder, "reason", r.Reason)
		},
		Refused: func(r approvals.Request, d approvals.Decision) {
			h.Metrics.ApprovalAnswerRefused(r.Route)
			h.log.Warn("approval answer refused", "request", r.ID, "call", r.CallID, "by", d.By, "why", d.Refused)
		},
	})
	if err != nil {
		return err
	}
	a.Service, a.store = svc, store
	return nil
}

// notify posts r to its route's webhook, in the background; the secret is
// read from the environment when the notification is sent.
func (h *Host) notify(r approvals.Request) {
	var wh *deployment.Webhook
	for _, route := range h.deployment().Approvals {
		if route.Name == r.Route {
			wh = route.Webhook
		}
	}
	if wh == nil {
		return
	}
	secret := os.Getenv(wh.SecretEnv)
	if secret == "" {
		// A route added by a reload whose secret the host never had: an
		// unsigned notification would teach receivers to accept them.
		h.Metrics.ApprovalWebhookFailed(r.Route)
		h.log.Error("approval webhook not sent: its secret_env is not set in the host's environment", "request", r.ID, "route", r.Route, "secret_env", wh.SecretEnv)
		return
	}
	w := &approvals.Webhook{URL: wh.URL, Secret: []byte(secret), ConsoleURL: wh.ConsoleURL, Attempts: webhookAttempts, Backoff: webhookBackoff}
	h.Approvals.notifier.Go(w, r, func(err error) {
		h.Metrics.ApprovalWebhookFailed(r.Route)
		h.log.Error("approval webhook not delivered", "request", r.ID, "route", r.Route, "error", err)
	})
}

// A webhook delivery's attempts: 5 in all, waiting 1s, 2s, 4s, 8s.
const (
	webhookAttempts = 5
	webhookBackoff  = time.Second
)

// consoleChanged reports whether a reload changed the console block, which
// takes effect at the next start (its listener is made once).
func consoleChanged(a, b *deployment.Console) bool {
	if a == nil || b == nil {
		return a != b
	}
	return a.Listen != b.Listen || a.SessionTTL != b.SessionTTL || a.AuditLog != b.AuditLog
}
