package main

import (
	"context"
	"encoding/xml"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/hcl/v2"
	"github.com/spf13/cobra"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/deployment"
	"github.com/plugkit-go/plugkit/host"
	"github.com/plugkit-go/plugkit/pipeline"
)

// testCommand is `host test [-c FILE] TESTFILE...`.
func testCommand(e *env) *cobra.Command {
	var junit string
	cmd := &cobra.Command{
		Use:   "test TESTFILE...",
		Short: "Check the deployment's policy against a table of cases",
		Long: "Start a throwaway host from the deployment file (its plugins as configured; no\n" +
			"admin socket, MCP or metrics), run each case of the HCL test files against it,\n" +
			"and report PASS or FAIL per case, like go test. A case is explained (a dry\n" +
			"run: stages 0-2, nothing executes) unless it says execute = true, which makes\n" +
			"the call for real in the throwaway host. Errors in a test file are reported as\n" +
			"file:line:col. Exit 0 when every case passes, 1 when one fails, 2 on errors.",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return runTests(cmd.Context(), e, args, junit) },
	}
	cmd.Flags().StringVar(&junit, "junit", "", "also write the results as JUnit XML to this file")
	return cmd
}

// caseResult is one case's outcome, as --json prints it.
type caseResult struct {
	File      string  `json:"file"`
	Line      int     `json:"line"`
	Name      string  `json:"name"`
	Pass      bool    `json:"pass"`
	Mode      string  `json:"mode"` // explain or execute
	Expect    string  `json:"expect"`
	Got       string  `json:"got"`
	DecidedBy string  `json:"decided_by,omitempty"`
	Rule      string  `json:"rule,omitempty"`
	Reason    string  `json:"reason,omitempty"`
	Failure   string  `json:"failure,omitempty"`
	Seconds   float64 `json:"seconds"`
}

// testReport is what --json prints.
type testReport struct {
	OK     bool         `json:"ok"`
	Passed int          `json:"passed"`
	Failed int          `json:"failed"`
	Cases  []caseResult `json:"cases"`
}

func runTests(ctx context.Context, e *env, files []string, junit string) error {
	var cases []*testCase
	var diags hcl.Diagnostics
	for _, f := range files {
		cs, d := parseCaseFile(f)
		cases = append(cases, cs...)
		diags = append(diags, d...)
	}
	if diags.HasErrors() {
		fmt.Fprint(e.stderr, shownText(deployment.Format(diags)))
		return fail(exitUsage, "the test files have errors; nothing was run")
	}

	executes := slices.ContainsFunc(cases, func(c *testCase) bool { return c.Execute })
	h, stop, err := startOffline(ctx, e, executes)
	if err != nil {
		return err
	}
	defer stop()
	for _, p := range h.Status() {
		if p.State.String() == "ACTIVE" {
			continue
		}
		if executes && p.Critical {
			// Every call it makes would be denied, or go unrecorded (an
			// audit log another host writes): say why, run nothing.
			return fail(exitFailed, "critical plugin %s is %s in the test host: %s; the cases that execute cannot run: nothing was run", shown(p.Name), p.State, shown(p.LastError))
		}
		fmt.Fprintf(e.stderr, "host: warning: plugin %s is %s in the test host: %s\n", shown(p.Name), p.State, shown(p.LastError))
	}

	self := admin.LocalPrincipal(os.Getuid())
	rep := testReport{Cases: []caseResult{}}
	for _, c := range cases {
		r := runCase(ctx, h, c, self)
		rep.Cases = append(rep.Cases, r)
		if r.Pass {
			rep.Passed++
		} else {
			rep.Failed++
		}
		if !e.json {
			printCase(e, r)
		}
	}
	rep.OK = rep.Failed == 0
	if junit != "" {
		if err := writeJUnit(junit, rep); err != nil {
			return fail(exitUsage, "--junit: %v", err)
		}
	}
	if e.json {
		if err := printJSON(e.stdout, rep); err != nil {
			return err
		}
	} else {
		// The summary lines of go test.
		if rep.OK {
			fmt.Fprintf(e.stdout, "PASS\nok  \t%s\t%d cases\n", e.config, rep.Passed)
		} else {
			fmt.Fprintf(e.stdout, "FAIL\nFAIL\t%s\t%d of %d cases failed\n", e.config, rep.Failed, rep.Failed+rep.Passed)
		}
	}
	if !rep.OK {
		return fail(exitFailed, "")
	}
	return nil
}

// runCase explains (or makes) one case's call and compares.
func runCase(ctx context.Context, h *host.Host, c *testCase, self pipeline.Principal) caseResult {
	start := time.Now()
	p := self
	if c.principal != nil {
		p = *c.principal
	}
	ctx = pipeline.WithPrincipal(ctx, p)
	r := caseResult{File: c.file, Line: c.pos.Start.Line, Name: c.Name, Expect: c.Expect, Mode: "explain"}
	if c.Execute {
		r.Mode = "execute"
		r.Got, r.DecidedBy, r.Rule, r.Reason = execute(ctx, h, c)
	} else {
		x := h.Explain(ctx, c.Tool, c.args, "test")
		r.Got, r.DecidedBy, r.Rule, r.Reason = x.Outcome, x.DecidedBy, x.Rule, x.Reason
	}
	r.Seconds = time.Since(start).Seconds()
	var why []string
	if r.Got != c.Expect {
		why = append(why, fmt.Sprintf("got %s, want %s", r.Got, c.Expect))
	}
	if c.DecidedBy != "" && r.DecidedBy != c.DecidedBy {
		why = append(why, fmt.Sprintf("decided by %q, want %q", r.DecidedBy, c.DecidedBy))
	}
	if c.Rule != "" && r.Rule != c.Rule {
		why = append(why, fmt.Sprintf("rule %q, want %q", r.Rule, c.Rule))
	}
	if c.ReasonContains != "" && !strings.Contains(r.Reason, c.ReasonContains) {
		why = append(why, fmt.Sprintf("reason %q does not contain %q", r.Reason, c.ReasonContains))
	}
	r.Pass = len(why) == 0
	if !r.Pass {
		r.Failure = strings.Join(why, "; ")
		if r.Reason != "" {
			r.Failure += " (" + r.Reason + ")"
		}
	}
	return r
}

// execute makes the case's call for real. A question is answered no and
// reported as ASK: the case says it would be asked, as explain does.
func execute(ctx context.Context, h *host.Host, c *testCase) (got, by, rule, reason string) {
	var asked atomic.Pointer[host.Question]
	caller, release := h.Approvals.Caller("test", func(_ context.Context, q host.Question) (bool, error) {
		asked.Store(&q)
		return false, nil
	})
	defer release()
	res := h.Call(ctx, c.Tool, c.args, caller)
	switch q := asked.Load(); {
	case q != nil:
		return pipeline.WouldAsk, res.DecidedBy, "", q.Question
	case res.OK:
		return pipeline.WouldRun, "", "", ""
	}
	return string(res.Error.Code), res.DecidedBy, "", res.Error.Message
}

func printCase(e *env, r caseResult) {
	status := "PASS"
	if !r.Pass {
		status = "FAIL"
	}
	fmt.Fprintf(e.stdout, "--- %s: %s (%.2fs)\n", status, shown(r.Name), r.Seconds)
	if !r.Pass {
		fmt.Fprintf(e.stdout, "    %s:%d: %s\n", shown(r.File), r.Line, shown(r.Failure))
	}
}

// JUnit XML, the shape CI systems read.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitFailure `xml:"failure,omitempty"`
}

type junitFailure struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// writeJUnit writes one suite per test file.
func writeJUnit(path string, rep testReport) error {
	var out junitSuites
	index := map[string]int{}
	for _, r := range rep.Cases {
		i, ok := index[r.File]
		if !ok {
			i = len(out.Suites)
			index[r.File] = i
			out.Suites = append(out.Suites, junitSuite{Name: r.File})
		}
		s := &out.Suites[i]
		jc := junitCase{Name: r.Name, Classname: r.File, Time: fmt.Sprintf("%.3f", r.Seconds)}
		if !r.Pass {
			s.Failures++
			jc.Failure = &junitFailure{Message: r.Failure, Text: fmt.Sprintf("%s:%d: %s", r.File, r.Line, r.Failure)}
		}
		s.Tests++
		s.Cases = append(s.Cases, jc)
	}
	for i := range out.Suites {
		var total float64
		for _, r := range rep.Cases {
			if r.File == out.Suites[i].Name {
				total += r.Seconds
			}
		}
		out.Suites[i].Time = fmt.Sprintf("%.3f", total)
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append([]byte(xml.Header), append(b, '\n')...), 0o644)
}
