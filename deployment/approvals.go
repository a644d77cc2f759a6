package deployment

import (
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/hcl/v2"
)

// CallerRoute is the route every Ask takes unless an approval block claims
// its tool: the client that made the call is asked (a terminal, an MCP
// elicitation). It is not declared; the name is reserved.
const CallerRoute = "caller"

// DefaultApprovalQuorum and DefaultRouteTimeout are an approval block's
// quorum and timeout when the block leaves them out.
const (
	DefaultApprovalQuorum = 1
	DefaultRouteTimeout   = 15 * time.Minute
)

// Approval is an approval block: a route that puts the Asks of some tools
// to principals other than the caller.
type Approval struct {
	// Name is the block's label; calls, the CLI and the audit name the
	// route by it.
	Name string
	// Approvers are principal selectors, as safety rules' callers are
	// written: "group:oncall", "user:alice", "key:release-bot", "*".
	Approvers []string
	// Quorum is how many distinct approvers must approve.
	Quorum int
	// Timeout is how long a call waits for its quorum before it is denied.
	Timeout time.Duration
	// Tools are tool-name globs (path.Match): an Ask about a call of a
	// matching tool takes this route. The first block in file order whose
	// globs match wins; an Ask that names a route (a rule's approval
	// attribute) takes that one instead. Empty: only Asks naming the route
	// take it.
	Tools []string
	// Webhook, when set, is notified of each request.
	Webhook *Webhook
	Range   hcl.Range
}

// Webhook is an approval block's webhook block: where a new request is
// POSTed, and the environment variable holding the HMAC secret it is
// signed with (never the secret itself: the file is not a secret store).
type Webhook struct {
	URL       string
	SecretEnv string
	// ConsoleURL, when set, is the console's address the notification
	// links to.
	ConsoleURL string
}

type approvalSyntax struct {
	Name      string         `hcl:"name,label"`
	NameRange hcl.Range      `hcl:"name,label_range"`
	Approvers *[]string      `hcl:"approvers,optional"`
	Quorum    *int           `hcl:"quorum,optional"`
	Timeout   *string        `hcl:"timeout,optional"`
	Tools     *[]string      `hcl:"tools,optional"`
	Webhook   *webhookSyntax `hcl:"webhook,block"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

type webhookSyntax struct {
	URL        *string `hcl:"url,optional"`
	SecretEnv  *string `hcl:"secret_env,optional"`
	ConsoleURL *string `hcl:"console_url,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

// approvals checks the approval blocks: unique names other than "caller",
// at least one approver selector, each a selector, a quorum that the
// selectors can reach where that is knowable (only exact KIND:ID
// selectors), valid tools globs, a webhook with an http(s) URL.
func (p *parser) approvals(list []approvalSyntax) []Approval {
	first := map[string]hcl.Range{}
	var out []Approval
	for i := range list {
		as := &list[i]
		p.names(as.Body, as, "the approval block")
		a := Approval{Name: as.Name, Range: as.DefRange, Quorum: DefaultApprovalQuorum}
		ok := true
		switch prev, dup := first[as.Name]; {
		case strings.TrimSpace(as.Name) == "":
			p.errorf(as.NameRange, "Invalid approval route name", "An approval block needs a name, approval \"oncall\" { ... }.")
			ok = false
		case as.Name == CallerRoute:
			p.errorf(as.NameRange, "Reserved approval route name", "%q is the route that asks the calling client, which every Ask takes unless a block claims its tool; name this block otherwise.", CallerRoute)
			ok = false
		case dup:
			p.errorf(as.NameRange, "Duplicate approval route", "An approval route named %q is already declared at %s; route names must be unique.", as.Name, at(prev))
			ok = false
		}
		first[as.Name] = as.DefRange
		if as.Approvers == nil || len(*as.Approvers) == 0 {
			p.errorf(valueRange(as.Body, "approvers", as.DefRange), "No approvers", "approval %q names no approvers: set approvers to principal selectors such as [\"group:oncall\"], [\"user:alice\", \"user:bob\"] or [\"key:release-bot\"].", as.Name)
			ok = false
		} else {
			a.Approvers = *as.Approvers
			for j, sel := range a.Approvers {
				if sel != "*" && (!strings.Contains(sel, ":") || strings.HasPrefix(sel, ":") || strings.HasSuffix(sel, ":")) {
					p.errorf(itemRange(as.Body, "approvers", j, as.DefRange), "Invalid approver selector",
						`approval %q: approvers %q is not a selector: write "*", KIND:ID ("user:alice", "local:root", "key:release-bot") or KEY:VALUE ("group:oncall").`, as.Name, sel)
					ok = false
				}
			}
		}
		a.Quorum = p.count(as.Body, "quorum", as.Quorum, 1, DefaultApprovalQuorum)
		if n, knowable := reachable(a.Approvers); knowable && a.Quorum > n {
			p.errorf(valueRange(as.Body, "quorum", as.DefRange), "Quorum out of reach",
				"approval %q needs %d distinct approvers but its approvers name only %d principals (%s); lower quorum or add approvers.", as.Name, a.Quorum, n, strings.Join(a.Approvers, ", "))
			ok = false
		}
		a.Timeout = p.duration(as.Body, "timeout", as.Timeout, DefaultRouteTimeout)
		// A route without tools takes only the Asks that name it (a
		// rule's approval attribute, a plugin's Decision.Route).
		if as.Tools != nil {
			a.Tools = *as.Tools
			for j, g := range a.Tools {
				if _, err := path.Match(g, ""); err != nil || g == "" {
					p.errorf(itemRange(as.Body, "tools", j, as.DefRange), "Invalid tools pattern",
						`approval %q: tools %q is not a valid glob pattern (path.Match syntax: *, ?, [a-z], \ escapes).`, as.Name, g)
					ok = false
				}
			}
		}
		a.Webhook = p.webhook(as)
		if ok {
			out = append(out, a)
		}
	}
	return out
}

// reachable counts the principals approvers can name, and whether that is
// knowable: only when every selector is an exact KIND:ID of a principal
// kind (an attribute such as group:oncall may match anyone).
func reachable(approvers []string) (int, bool) {
	kinds := []string{"user", "agent", "service", "local", "key"}
	seen := map[string]bool{}
	for _, sel := range approvers {
		kind, _, _ := strings.Cut(sel, ":")
		if sel == "*" || !slices.Contains(kinds, kind) {
			return 0, false
		}
		seen[sel] = true
	}
	return len(seen), len(approvers) > 0
}

func (p *parser) webhook(as *approvalSyntax) *Webhook {
	ws := as.Webhook
	if ws == nil {
		return nil
	}
	p.names(ws.Body, ws, "the webhook block")
	w := &Webhook{}
	if ws.URL == nil {
		p.errorf(ws.DefRange, "Missing webhook url", "approval %q: the webhook block needs url, where each new request is POSTed.", as.Name)
	} else if u, err := url.Parse(*ws.URL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		p.errorf(valueRange(ws.Body, "url", ws.DefRange), "Invalid webhook url", "approval %q: webhook url %q is not an http or https URL.", as.Name, *ws.URL)
	} else {
		w.URL = *ws.URL
	}
	if ws.SecretEnv == nil || *ws.SecretEnv == "" {
		p.errorf(valueRange(ws.Body, "secret_env", ws.DefRange), "Missing webhook secret_env",
			"approval %q: the webhook block needs secret_env, the environment variable holding the secret each notification is signed with (HMAC-SHA256).", as.Name)
	} else {
		w.SecretEnv = *ws.SecretEnv
	}
	if ws.ConsoleURL != nil {
		if u, err := url.Parse(*ws.ConsoleURL); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			p.errorf(valueRange(ws.Body, "console_url", ws.DefRange), "Invalid console_url", "approval %q: console_url %q is not an http or https URL.", as.Name, *ws.ConsoleURL)
		} else {
			w.ConsoleURL = *ws.ConsoleURL
		}
	}
	return w
}

// RouteNamed is the route called name, or nil when the deployment
// declares none (CallerRoute is never declared).
func RouteNamed(routes []Approval, name string) *Approval {
	for i := range routes {
		if routes[i].Name == name {
			return &routes[i]
		}
	}
	return nil
}

// RouteFor is the route an Ask about tool takes when the Ask names none:
// the first approval whose tools match, or nil for the caller route.
func RouteFor(routes []Approval, tool string) *Approval {
	for i := range routes {
		for _, g := range routes[i].Tools {
			if ok, _ := path.Match(g, tool); ok {
				return &routes[i]
			}
		}
	}
	return nil
}

// Console is the console block: the web console where approvers answer
// requests and operators see plugins, tools and audit lines. Off (nil)
// unless the file has the block.
type Console struct {
	// Listen is a loopback host:port.
	Listen string
	// SessionTTL is how long a sign-in lasts.
	SessionTTL time.Duration
	// AuditLog, when set, is the audit log (absolute) whose recent lines
	// the console's audit page shows; the host reads it.
	AuditLog string
	Range    hcl.Range
}

// DefaultConsoleSession is a console sign-in's lifetime by default.
const DefaultConsoleSession = 30 * time.Minute

type consoleSyntax struct {
	Listen     *string `hcl:"listen,optional"`
	SessionTTL *string `hcl:"session_ttl,optional"`
	AuditLog   *string `hcl:"audit_log,optional"`

	Body     hcl.Body  `hcl:",body"`
	Unknown  hcl.Body  `hcl:",remain"`
	DefRange hcl.Range `hcl:",def_range"`
}

// console checks the console block: a loopback listen address (the
// console's sign-in is a bearer credential typed in a form: it does not
// leave the machine in the clear).
func (p *parser) console(cs *consoleSyntax) *Console {
	if cs == nil {
		return nil
	}
	p.names(cs.Body, cs, "the console block")
	c := &Console{Range: cs.DefRange}
	if cs.Listen == nil {
		p.errorf(cs.DefRange, "Missing console listen", `The console block needs listen, a loopback address such as "127.0.0.1:8444".`)
	} else if err := checkLoopback(*cs.Listen, "the console"); err != nil {
		p.errorf(valueRange(cs.Body, "listen", cs.DefRange), "Invalid console listen", "listen %q %v.", *cs.Listen, err)
	} else {
		c.Listen = *cs.Listen
	}
	c.SessionTTL = p.duration(cs.Body, "session_ttl", cs.SessionTTL, DefaultConsoleSession)
	if cs.AuditLog != nil {
		if *cs.AuditLog == "" {
			p.errorf(valueRange(cs.Body, "audit_log", cs.DefRange), "Invalid console audit_log", "audit_log is empty: name the audit plugin's log file, such as \"run/audit/audit.log\", or leave it out.")
		} else {
			c.AuditLog, _ = p.resolve(*cs.AuditLog)
		}
	}
	return c
}
