package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/pipeline"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// exitReplayChanged is replay's exit when a recorded call's outcome changes
// in a direction --fail-on forbids.
const exitReplayChanged = 6

// Directions of a changed outcome, by how strict the outcome is: ALLOWED,
// then ASK, then a refusal (DENIED, UNKNOWN_TOOL, INVALID_ARGUMENTS).
const (
	nowDenied  = "now denied"
	nowAllowed = "now allowed"
	nowAsked   = "now asked"
)

// redactedMark starts the secrets scanner's marker (secrets.Marker), which
// record_arguments = "redacted" puts in place of a credential.
const redactedMark = "[redacted: "

// maxExamples is how many calls replay shows of each group.
const maxExamples = 3

func replayCommand(e *env) *cobra.Command {
	var failOn string
	cmd := &cobra.Command{
		Use:   "replay AUDIT_LOG...",
		Short: "Re-evaluate recorded calls under the deployment file's policy",
		Long: "Start a throwaway host from the deployment file given with -c (the candidate\n" +
			"policy; no admin socket, MCP or metrics), explain each call of the audit logs\n" +
			"under it as `host explain` does (stages 0-2: nothing executes, nothing is\n" +
			"audited, no approver is asked), for the principal and with the arguments the\n" +
			"log recorded (its attributes too), and print the calls whose outcome would\n" +
			"change, grouped by direction (now denied, now allowed, now asked) and by the\n" +
			"rule that decides. A call whose line has no arguments (the audit's\n" +
			"record_arguments is off) is judged when the candidate's answer holds for\n" +
			"every call of its tool by its principal (denied, allowed or asked whatever the\n" +
			"arguments); otherwise it is not judged, naming the rules that look at them.\n" +
			"--fail-on loosen, tighten or any exits 6 when a\n" +
			"change goes that way, so that CI can gate a policy change.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch failOn {
			case "", "loosen", "tighten", "any":
			default:
				return fail(exitUsage, "--fail-on %q: want loosen, tighten or any", failOn)
			}
			return runReplay(cmd.Context(), e, args, failOn)
		},
	}
	cmd.Flags().StringVar(&failOn, "fail-on", "", "exit 6 when an outcome changes this way: loosen (now allowed, or asked where it was denied), tighten (now denied, or asked where it was allowed) or any")
	return cmd
}

// recordedCall is one call line of an audit log.
type recordedCall struct {
	File string
	Line auditlog.Line
}

// replayedCall is one call whose outcome changes, or that could not be
// judged, as the report shows it.
type replayedCall struct {
	File      string `json:"file"`
	Seq       uint64 `json:"seq"`
	ID        string `json:"id"`
	Tool      string `json:"tool"`
	Principal string `json:"principal"`
	// Attributes are the principal's attributes as the line recorded
	// them; AttributesUnknown marks a line written before they were.
	Attributes        []string `json:"attributes,omitempty"`
	AttributesUnknown bool     `json:"attributes_unknown,omitempty"`
	Arguments         string   `json:"arguments,omitempty"`
	// ArgumentsUnrecorded marks a call judged without its arguments (the
	// candidate denies, allows or asks every call of the tool by the
	// principal, whatever the arguments).
	ArgumentsUnrecorded bool   `json:"arguments_unrecorded,omitempty"`
	Was                 string `json:"was"`
	WasBy               string `json:"was_decided_by,omitempty"`
	Now                 string `json:"now,omitempty"`
	NowBy               string `json:"now_decided_by,omitempty"`
	Rule                string `json:"rule,omitempty"`
	Reason              string `json:"reason,omitempty"`
}

// replayGroup is the changed calls of one direction and deciding rule.
type replayGroup struct {
	Direction string         `json:"direction"`
	DecidedBy string         `json:"decided_by"`
	Rule      string         `json:"rule,omitempty"`
	Count     int            `json:"count"`
	Examples  []replayedCall `json:"examples"`
}

// replayReport is what replay found; --json prints it.
type replayReport struct {
	Candidate string `json:"candidate"`
	Calls     int    `json:"calls"`
	Judged    int    `json:"judged"`
	Unchanged int    `json:"unchanged"`
	Changed   int    `json:"changed"`
	// Loosened and Tightened count the changes each way.
	Loosened  int            `json:"loosened"`
	Tightened int            `json:"tightened"`
	Groups    []*replayGroup `json:"groups"`
	NotJudged []replayedCall `json:"not_judged"`
	// WithoutAttributes counts the calls judged whose line does not record
	// the principal's attributes (written before they were): judged as
	// for a principal without any.
	WithoutAttributes int `json:"without_attributes"`
	// WithoutArguments counts the calls judged although their line has no
	// arguments: the candidate denies, allows or asks every call of the
	// tool by the principal, whatever the arguments.
	WithoutArguments int     `json:"without_arguments"`
	Seconds          float64 `json:"seconds"`
	CallsPerSec      float64 `json:"calls_per_second"`
	// Changes lists every changed call, in the logs' order (the groups
	// hold examples only).
	Changes []replayedCall `json:"changes"`
}

func runReplay(ctx context.Context, e *env, files []string, failOn string) error {
	var calls []recordedCall
	for _, f := range files {
		cs, err := readAuditCalls(f)
		if err != nil {
			return fail(exitUsage, "%v", err)
		}
		calls = append(calls, cs...)
	}
	h, stop, err := startOffline(ctx, e, false)
	if err != nil {
		return err
	}
	defer stop()
	for _, p := range h.Status() {
		if p.State.String() != "ACTIVE" {
			fmt.Fprintf(e.stderr, "host: warning: plugin %s is %s in the replay host: %s\n", shown(p.Name), p.State, shown(p.LastError))
		}
	}
	rep := replay(ctx, h, calls)
	rep.Candidate = e.config
	if e.json {
		if err := printJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		printReplay(e.stdout, rep)
	}
	if (failOn == "loosen" || failOn == "any") && rep.Loosened > 0 ||
		(failOn == "tighten" || failOn == "any") && rep.Tightened > 0 {
		return fail(exitReplayChanged, "")
	}
	return nil
}

// readAuditCalls reads the call lines of an audit log, each checked as
// `audit verify` reads it (checkpoint lines are skipped; the chain is not
// checked here: `audit verify` does that).
func readAuditCalls(path string) ([]recordedCall, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read audit log: %w", err)
	}
	defer f.Close()
	var out []recordedCall
	r := bufio.NewReader(f)
	for n := 1; ; n++ {
		text, err := r.ReadBytes('\n')
		if len(text) == 0 && err == io.EOF {
			return out, nil
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("read audit log %s: %w", path, err)
		}
		text = bytes.TrimSuffix(text, []byte("\n"))
		if bytes.HasPrefix(text, []byte(`{"kind":"checkpoint",`)) {
			continue
		}
		l, perr := auditlog.ParseLine(text)
		if perr != nil {
			return nil, fmt.Errorf("%s:%d: not an audit line: %v", path, n, perr)
		}
		out = append(out, recordedCall{File: path, Line: l})
		if err == io.EOF {
			return out, nil
		}
	}
}

// outcomeOf is a recorded call's outcome as explain would name it: a call
// that got past the guards (it ran, or failed or was blocked running) is
// ALLOWED; one the approver did not approve is ASK; "" when the record
// cannot say (the caller gave up).
func outcomeOf(l auditlog.Line) string {
	switch l.Code {
	case "", "TOOL_ERROR", "TOOL_TIMEOUT", "BLOCKED":
		return pipeline.WouldRun
	case "DENIED":
		if l.DecidedBy == host.ApproverPlugin {
			return pipeline.WouldAsk
		}
		return pipeline.WouldDeny
	case "UNKNOWN_TOOL", "INVALID_ARGUMENTS":
		return l.Code
	}
	return ""
}

// strictness orders outcomes: a change to a stricter one tightens.
func strictness(outcome string) int {
	switch outcome {
	case pipeline.WouldRun:
		return 0
	case pipeline.WouldAsk:
		return 1
	}
	return 2
}

func replay(ctx context.Context, h *host.Host, calls []recordedCall) *replayReport {
	rep := &replayReport{Calls: len(calls), Groups: []*replayGroup{}, NotJudged: []replayedCall{}, Changes: []replayedCall{}}
	groups := map[[3]string]*replayGroup{}
	start := time.Now()
	for _, c := range calls {
		l := c.Line
		rc := replayedCall{File: c.File, Seq: l.Seq, ID: l.ID, Tool: l.Tool, Principal: l.PrincipalKind + ":" + l.Principal,
			Was: outcomeOf(l), WasBy: l.DecidedBy}
		p := pipeline.Principal{ID: l.Principal, Kind: l.PrincipalKind, Attributes: l.PrincipalAttributes}
		switch {
		case l.Principal == "" && l.PrincipalKind == "":
			rc.Principal = "anonymous"
		case l.PrincipalAttributes == nil:
			rc.AttributesUnknown = true
		default:
			rc.Attributes = l.PrincipalAttributes
		}
		switch {
		case strings.Contains(l.Tool, ":"):
			rc.Reason = "not a tool call (" + l.Tool + ")"
		case rc.Was == "":
			rc.Reason = "the recorded outcome (" + l.Code + ") does not say what stage 2 decided"
		}
		if rc.Reason != "" {
			rep.NotJudged = append(rep.NotJudged, rc)
			continue
		}
		var x pipeline.Explanation
		if l.Arguments == nil {
			var why string
			if x, why = withoutArguments(ctx, h, p, l.Tool, rc.Was); why != "" {
				rc.Reason = why
				rep.NotJudged = append(rep.NotJudged, rc)
				continue
			}
			rc.ArgumentsUnrecorded = true
			rep.WithoutArguments++
		} else {
			rc.Arguments = string(l.Arguments)
			x = h.Explain(pipeline.WithPrincipal(ctx, p), l.Tool, l.Arguments, l.Caller)
		}
		rc.Now, rc.NowBy, rc.Rule = x.Outcome, x.DecidedBy, x.Rule
		if rc.Now != rc.Was && bytes.Contains(l.Arguments, []byte(redactedMark)) {
			// The credential the audit kept out of the log may be what
			// decided the call (a secrets rule): its new outcome says
			// nothing about the candidate.
			rc.Reason = "arguments redacted, and the recorded decision may rest on the credential removed (now " + x.Outcome + ")"
			rep.NotJudged = append(rep.NotJudged, rc)
			continue
		}
		rep.Judged++
		if rc.AttributesUnknown {
			rep.WithoutAttributes++
		}
		rc.Reason = x.Reason
		if rc.Now == rc.Was {
			rep.Unchanged++
			continue
		}
		rep.Changed++
		dir := nowDenied
		switch {
		case rc.Now == pipeline.WouldRun:
			dir = nowAllowed
		case rc.Now == pipeline.WouldAsk:
			dir = nowAsked
		}
		if strictness(rc.Now) < strictness(rc.Was) {
			rep.Loosened++
		} else {
			rep.Tightened++
		}
		by, rule := rc.NowBy, rc.Rule
		if dir == nowAllowed {
			by, rule = rc.WasBy, "" // what no longer decides
		}
		k := [3]string{dir, by, rule}
		g := groups[k]
		if g == nil {
			g = &replayGroup{Direction: dir, DecidedBy: by, Rule: rule}
			groups[k] = g
			rep.Groups = append(rep.Groups, g)
		}
		g.Count++
		if len(g.Examples) < maxExamples {
			g.Examples = append(g.Examples, rc)
		}
		rep.Changes = append(rep.Changes, rc)
	}
	rep.Seconds = time.Since(start).Seconds()
	if rep.Seconds > 0 {
		rep.CallsPerSec = float64(rep.Judged) / rep.Seconds
	}
	sort.SliceStable(rep.Groups, func(i, j int) bool {
		a, b := rep.Groups[i], rep.Groups[j]
		if a.Direction != b.Direction {
			return a.Direction < b.Direction
		}
		return a.Count > b.Count
	})
	return rep
}

func printReplay(w io.Writer, rep *replayReport) {
	fmt.Fprintf(w, "replay of %d recorded calls under %s: %d judged, %d unchanged, %d changed (%d loosened, %d tightened), %d not judged\n",
		rep.Calls, shown(rep.Candidate), rep.Judged, rep.Unchanged, rep.Changed, rep.Loosened, rep.Tightened, len(rep.NotJudged))
	for _, g := range rep.Groups {
		by := g.DecidedBy
		if g.Rule != "" {
			by += fmt.Sprintf(", rule %q", g.Rule)
		}
		what := "by " + by
		if g.Direction == nowAllowed {
			what = "was decided by " + by
		}
		fmt.Fprintln(w)
		fmt.Fprintln(w, shown(fmt.Sprintf("%s (%s): %d calls", g.Direction, what, g.Count)))
		for _, c := range g.Examples {
			line := fmt.Sprintf("  seq %d  %s %s for %s: was %s", c.Seq, c.Tool, compactJSON(c.Arguments), c.who(), c.Was)
			if c.Now != pipeline.WouldRun && c.Reason != "" {
				line += ", now " + c.Now + ": " + c.Reason
			}
			fmt.Fprintln(w, shown(line))
		}
	}
	if len(rep.NotJudged) > 0 {
		fmt.Fprintf(w, "\nnot judged: %d calls\n", len(rep.NotJudged))
		for i, c := range rep.NotJudged {
			if i == maxExamples*3 {
				fmt.Fprintf(w, "  ... and %d more (--json lists them all)\n", len(rep.NotJudged)-i)
				break
			}
			fmt.Fprintln(w, shown(fmt.Sprintf("  seq %d  %s for %s: %s", c.Seq, c.Tool, c.who(), c.Reason)))
		}
	}
	if rep.WithoutArguments > 0 {
		fmt.Fprintf(w, "\n%d calls judged without their arguments (not recorded): the candidate decides every call of their tool for their principal alike, whatever the arguments\n", rep.WithoutArguments)
	}
	if rep.WithoutAttributes > 0 {
		fmt.Fprintf(w, "\n%d calls judged as for a principal without attributes: their lines do not record the principal's (written before principal_attributes was)\n", rep.WithoutAttributes)
	}
	fmt.Fprintf(w, "\n%d calls judged in %.2fs (%.0f calls/s)\n", rep.Judged, rep.Seconds, rep.CallsPerSec)
}

// who is the call's principal with the group attributes it was judged
// with ("agent:ann (group:canary)"), as the report shows it.
func (c replayedCall) who() string {
	var groups []string
	for _, a := range c.Attributes {
		if strings.HasPrefix(a, "group:") {
			groups = append(groups, a)
		}
	}
	if len(groups) == 0 {
		return c.Principal
	}
	return c.Principal + " (" + strings.Join(groups, ", ") + ")"
}
