package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"golang.org/x/sys/unix"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/shared/secrets"
)

func printJSON(w io.Writer, v any) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return err
	}
	_, err := w.Write(jsonShown(buf.Bytes()))
	return err
}

func status(ctx context.Context, e *env, _ []string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, st)
	}
	fmt.Fprintf(e.stdout, "host %s, pid %d, up %s\n\n", st.Version, st.PID, st.Uptime)
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "PLUGIN\tSTATE\tPID\tUPTIME\tRESTARTS\tSANDBOX\tTOOLS\tLAST ERROR")
	for _, p := range st.Plugins {
		name := p.Name
		if p.Critical {
			name += " (critical)"
		}
		pid := "-"
		if p.PID > 0 {
			pid = fmt.Sprint(p.PID)
		}
		state := p.State
		if p.Problem != "" {
			state += " (problem)"
		}
		sandbox := p.Sandbox.State
		if p.Sandbox.Egress != "" {
			sandbox += ", egress: " + p.Sandbox.Egress
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\n", shown(name), shown(state), pid, orDash(p.Uptime), p.Restarts, orDash(shown(sandbox)), orDash(shown(strings.Join(p.Tools, ","))), orDash(shown(p.LastError)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, p := range st.Plugins {
		if len(p.Sandbox.Gaps) > 0 {
			fmt.Fprintf(e.stdout, "\n%s: sandbox partial, not enforced:\n", shown(p.Name))
			for _, g := range p.Sandbox.Gaps {
				fmt.Fprintf(e.stdout, "  %s\n", shown(g.String()))
			}
		}
	}
	printLimits(e.stdout, st.Plugins)
	printEgress(e.stdout, st.Plugins)
	for _, p := range st.Plugins {
		if len(p.Held) > 0 {
			fmt.Fprintf(e.stdout, "\n%s: tools held absent:\n", shown(p.Name))
			for _, h := range p.Held {
				fmt.Fprintf(e.stdout, "  %s\n", shown(h))
			}
		}
	}
	for _, p := range st.Plugins {
		if p.Problem != "" {
			fmt.Fprintf(e.stdout, "\n%s: problem: %s\n", shown(p.Name), shown(p.Problem))
		}
	}
	printExits(e.stdout, st.Plugins)
	return nil
}

// printLimits says what enforces each plugin's limits, once for the
// plugins that share the same (those of the host's default sandbox).
func printLimits(w io.Writer, plugins []admin.PluginStatus) {
	var order []string
	names := map[string][]string{}
	for _, p := range plugins {
		if len(p.Sandbox.Limits) == 0 {
			continue
		}
		key := strings.Join(p.Sandbox.Limits, "\n")
		if _, ok := names[key]; !ok {
			order = append(order, key)
		}
		names[key] = append(names[key], p.Name)
	}
	for _, key := range order {
		fmt.Fprintf(w, "\nlimits of %s, and what enforces them:\n", shown(strings.Join(names[key], ", ")))
		for _, l := range strings.Split(key, "\n") {
			fmt.Fprintf(w, "  %s\n", shown(l))
		}
	}
}

// printEgress says, for each plugin with an egress list, how many
// connections its proxy let through and refused, and the last refusal.
func printEgress(w io.Writer, plugins []admin.PluginStatus) {
	for _, p := range plugins {
		if p.Egress == nil {
			continue
		}
		fmt.Fprintf(w, "\n%s: egress: %d allowed, %d refused\n", p.Name, p.Egress.Allowed, p.Egress.Refused)
		if p.Egress.LastRefused != "" {
			fmt.Fprintf(w, "  last refused: %s\n", p.Egress.LastRefused)
		}
	}
}

// printExits follows the table with how each plugin's last crashed process
// ended and the last lines of its stderr.
func printExits(w io.Writer, plugins []admin.PluginStatus) {
	for _, p := range plugins {
		if p.LastExit == "" {
			continue
		}
		fmt.Fprintf(w, "\n%s: last exit: %s\n", shown(p.Name), shown(p.LastExit))
		switch n := len(p.Stderr); {
		case n == 1:
			fmt.Fprintln(w, "  stderr (last line):")
		case n > 1:
			fmt.Fprintf(w, "  stderr (last %d lines):\n", n)
		}
		for _, line := range p.Stderr {
			fmt.Fprintf(w, "    %s\n", shown(line))
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func tools(ctx context.Context, e *env, _ []string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	ts, err := e.toolsAs.list(ctx, c)
	if err != nil {
		return err
	}
	if e.json {
		return printJSON(e.stdout, ts)
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tOWNER\tHINTS\tPARAMETERS\tDESCRIPTION")
	for _, t := range ts {
		var hints []string
		if t.Kind != "" {
			// An entry served as a resource or a prompt, not a tool.
			hints = append(hints, t.Kind)
		}
		if t.ReadOnly {
			hints = append(hints, "read-only")
		}
		if t.Destructive {
			hints = append(hints, "destructive")
		}
		if t.Idempotent {
			hints = append(hints, "idempotent")
		}
		if t.Timeout != "" {
			hints = append(hints, "timeout "+t.Timeout)
		}
		desc := t.Description
		if t.Held != "" {
			hints = append([]string{"HELD"}, hints...)
			desc = "held absent: " + t.Held
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", shown(t.Name), shown(t.Owner), orDash(shown(strings.Join(hints, ","))), shown(parameterSummary(t.Parameters)), oneLine(desc))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	// What the tools' sources claimed and the checks they failed, below
	// the table (a note may be long).
	for _, t := range ts {
		if len(t.Notes) == 0 {
			continue
		}
		fmt.Fprintf(e.stdout, "\n%s:\n", shown(t.Name))
		for _, n := range t.Notes {
			fmt.Fprintf(e.stdout, "  %s\n", shown(n))
		}
	}
	return nil
}

// parameterSummary lists a schema's properties, required ones marked.
func parameterSummary(schema json.RawMessage) string {
	var s struct {
		Properties map[string]struct {
			Type any `json:"type"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	if json.Unmarshal(schema, &s) != nil || len(s.Properties) == 0 {
		return "-"
	}
	var out []string
	for name, p := range s.Properties {
		item := fmt.Sprintf("%s:%v", name, p.Type)
		for _, r := range s.Required {
			if r == name {
				item += "*"
			}
		}
		out = append(out, item)
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func call(ctx context.Context, e *env, args []string) error {
	tool, raw := args[0], "{}"
	if len(args) == 2 {
		raw = args[1]
	}
	if !json.Valid([]byte(raw)) {
		return fail(exitUsage, "arguments %q are not valid JSON (quote them, e.g. '{\"q\":\"plugins\"}')", raw)
	}
	c, err := e.client()
	if err != nil {
		return err
	}
	var ask func(admin.Question) bool
	if isTerminal(e.stdin) || e.answerFromStdin {
		ask = func(q admin.Question) bool { return prompt(e, q) }
		c.OnElicit = func(q admin.Elicitation) json.RawMessage { return elicitPrompt(e, q) }
	}
	c.OnWaiting = func(w admin.Waiting) {
		fmt.Fprintf(e.stderr, "waiting for approval by %s (request %s, until %s)\n", shown(w.Who), shown(w.Request), w.Expires.UTC().Format(time.RFC3339))
	}
	r, err := c.Call(ctx, tool, json.RawMessage(raw), ask)
	if err != nil {
		return requestError(err)
	}
	if e.json {
		if err := printJSON(e.stdout, r); err != nil {
			return err
		}
	} else if r.OK {
		var v any
		if json.Unmarshal(r.Value, &v) == nil {
			if s, ok := v.(string); ok {
				fmt.Fprintln(e.stdout, shownText(s))
			} else {
				_ = printJSON(e.stdout, v)
			}
		}
	} else {
		line := r.Error.Code + ": " + r.Error.Message
		if r.DecidedBy != "" {
			line += " (decided by " + r.DecidedBy + ")"
		}
		fmt.Fprintln(e.stdout, shown(line))
	}
	if !r.OK {
		return fail(exitFailed, "")
	}
	return nil
}

// promptScanner finds the credentials a prompt must not show.
var promptScanner = secrets.New(nil)

// prompt asks the person at the terminal; anything but yes is a no. The
// call's arguments are shown with any credential in them replaced by a
// marker naming its kind: a terminal's scrollback and recordings outlive
// the decision.
func prompt(e *env, q admin.Question) bool {
	args := q.Arguments
	if red, hits, err := promptScanner.RedactJSON([]byte(args)); err == nil && len(hits) > 0 {
		args = string(red)
	}
	fmt.Fprintf(e.stderr, "%s\n  tool: %s\n  arguments: %s\n  for: %s\nAllow? [y/N] ", shown(q.Question), shown(q.Tool), shown(args), shown(q.For))
	line, _ := e.readLine()
	switch strings.ToLower(strings.TrimSpace(line)) {
	case "y", "yes":
		return true
	}
	return false
}

// isTerminal says whether r is a terminal a person can answer at (a
// character device such as /dev/null is not).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}

func reload(ctx context.Context, e *env, args []string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	plugin := ""
	if len(args) == 1 {
		plugin = args[0]
	}
	msg, err := c.Reload(ctx, plugin)
	var restart []string
	if nr := (*admin.NeedsRestart)(nil); errors.As(err, &nr) {
		restart, err = nr.Settings, nil
	}
	if err != nil {
		return fail(exitFailed, "reload: %v", err)
	}
	if e.json {
		if err := printJSON(e.stdout, admin.Message{Message: msg, Restart: restart}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(e.stdout, shownText(msg))
		if len(restart) > 0 {
			fmt.Fprintf(e.stdout, "host settings changed, not applied: %s: takes effect at restart\n", strings.Join(restart, ", "))
		}
	}
	if len(restart) > 0 {
		// Said above; the code tells a script the file is not all in force.
		return fail(exitRestart, "")
	}
	return nil
}

// stopHost asks the host to stop and waits until its process has exited:
// the host stops its plugins first, and a critical audit writes every
// result it holds before its process ends, so once `host stop` returns the
// audit log has a line for every call that returned.
func stopHost(ctx context.Context, e *env, _ []string) error {
	c, err := e.client()
	if err != nil {
		return err
	}
	st, err := c.Status(ctx)
	if err != nil {
		return err
	}
	if _, err := c.Stop(ctx); err != nil {
		return err
	}
	if err := waitGone(ctx, st.PID); err != nil {
		return fmt.Errorf("the host (pid %d) is stopping, but %w", st.PID, err)
	}
	// The host's own answer says it is stopping; once its process is gone
	// it has stopped.
	msg := "stopped"
	if e.json {
		return printJSON(e.stdout, admin.Message{Message: msg})
	}
	fmt.Fprintln(e.stdout, msg)
	return nil
}

// waitGone waits until process pid has exited, or ctx ends.
func waitGone(ctx context.Context, pid int) error {
	if pid <= 0 {
		return nil
	}
	for {
		if err := unix.Kill(pid, 0); errors.Is(err, unix.ESRCH) {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("it has not exited yet: %w", ctx.Err())
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// oneLine keeps a table row on one line: a description's line breaks and
// tabs become spaces, and its other hidden characters are escaped (see
// shown).
func oneLine(s string) string {
	return shown(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s))
}

// requestError is the CLI's error for an admin request that failed: the
// host unreachable or not trusted as it is, else the host refused the
// request (too large, malformed), a usage error.
func requestError(err error) error {
	var ce *admin.ConnectError
	var pe *admin.PeerError
	if errors.As(err, &ce) || errors.As(err, &pe) {
		return err
	}
	return fail(exitUsage, "%v", err)
}
