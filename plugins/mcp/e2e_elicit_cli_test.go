package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestElicitationAtTheTerminal: `host call` shows a bridged server's
// elicitation (the form's fields, or the URL) and sends the answer back,
// through the real binaries and the npm server-everything; a call that
// cannot ask its user has the question declined.
func TestElicitationAtTheTerminal(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	dir := t.TempDir()
	h := startHost(t, deployment(t, dir, everythingBlock(t)), 2)

	// call runs `host call --json` with stdin and the flags given; it
	// returns the text of the server's result and what the user was shown.
	call := func(t *testing.T, stdin string, tool, args string, flags ...string) (string, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
		defer cancel()
		argv := append([]string{"call", "--json", "-c", h.config}, flags...)
		cmd := exec.CommandContext(ctx, bin("host"), append(argv, tool, args)...)
		var out, errb bytes.Buffer
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &out, &errb
		if err := cmd.Run(); err != nil {
			t.Fatalf("host call %s: %v\nstdout: %s\nstderr: %s\nhost log:\n%s", tool, err, out.String(), errb.String(), h.log)
		}
		var r callResult
		if err := json.Unmarshal(out.Bytes(), &r); err != nil || !r.OK {
			t.Fatalf("host call %s: %v %s\nstderr: %s", tool, err, out.String(), errb.String())
		}
		return text(t, r.Value), errb.String()
	}
	const form, url = "ev_trigger-elicitation-request", "ev_trigger-url-elicitation"
	urlArgs := `{"url":"https://example.com/consent"}`

	t.Run("form accepted", func(t *testing.T) {
		// Fields in the order the schema reaches the host (the bridge
		// passes it on as a JSON object with its keys sorted): birthdate,
		// check, email, firstLine, homepage, integer (a word is asked
		// again), legacyTitledEnum, name (required: an empty answer is
		// asked again), number, then four choices.
		answers := "y\n" + "\n" + "yes\n" + "\n\n\n" + "seven\n7\n" + "pet-2\n" + "\nAnn Example\n" + "2.5\n" + "\n" + "hero-3\n" + "Piano, Drums\n" + "Joey\n"
		got, shownToUser := call(t, answers, form, "{}", "--answer-from-stdin")
		for _, want := range []string{"- Name: Ann Example", "- Agreed to terms: true", `"integer": 7`, `"number": 2.5`, `"untitledSingleSelectEnum": "Joey"`, `"Piano",`, `"titledSingleSelectEnum": "hero-3"`, `"fish-1"`, `"legacyTitledEnum": "pet-2"`, `"firstLine": "It was a dark and stormy night."`} {
			if !strings.Contains(got, want) {
				t.Errorf("the server's result lacks %s:\n%s\nthe user saw:\n%s", want, got, shownToUser)
			}
		}
		if strings.Contains(got, `"email"`) {
			t.Errorf("an optional field left empty reached the server:\n%s", got)
		}
		for _, want := range []string{"Please provide inputs", "name (String) [string, required]", "name is required", `"seven" is not an integer`, "hero-3 = Wonder Woman", "pet-2 = Dogs"} {
			if !strings.Contains(shownToUser, want) {
				t.Errorf("the user was not shown %q:\n%s", want, shownToUser)
			}
		}
	})
	t.Run("form declined", func(t *testing.T) {
		if got, _ := call(t, "n\n", form, "{}", "--answer-from-stdin"); !strings.Contains(got, "User declined") {
			t.Errorf("decline: %s", got)
		}
	})
	t.Run("form cancelled at the end of stdin", func(t *testing.T) {
		if got, _ := call(t, "y\nAnn\n", form, "{}", "--answer-from-stdin"); !strings.Contains(got, "User cancelled") {
			t.Errorf("cancel: %s", got)
		}
	})
	t.Run("url completed", func(t *testing.T) {
		got, shownToUser := call(t, "y\n", url, urlArgs, "--answer-from-stdin")
		if !strings.Contains(got, "User completed the URL elicitation flow") {
			t.Errorf("url: %s", got)
		}
		if !strings.Contains(shownToUser, "url: https://example.com/consent") {
			t.Errorf("the user was not shown the URL:\n%s", shownToUser)
		}
	})
	t.Run("url declined", func(t *testing.T) {
		if got, _ := call(t, "n\n", url, urlArgs, "--answer-from-stdin"); !strings.Contains(got, "declined to open the URL") {
			t.Errorf("url decline: %s", got)
		}
	})
	t.Run("no terminal: declined", func(t *testing.T) {
		// Stdin is a pipe and the flag is not given: nobody is asked, even
		// with answers waiting on stdin.
		got, shownToUser := call(t, "y\nAnn Example\n", form, "{}")
		if !strings.Contains(got, "User declined") {
			t.Errorf("form without a terminal: %s", got)
		}
		if got, _ := call(t, "y\n", url, urlArgs); !strings.Contains(got, "declined to open the URL") {
			t.Errorf("url without a terminal: %s", got)
		}
		if strings.Contains(shownToUser, "Please provide inputs") {
			t.Errorf("a call that cannot ask showed the question:\n%s", shownToUser)
		}
	})
	// The host logs that questions were asked and answered, never what
	// was answered.
	log := h.log.String()
	if n := strings.Count(log, "elicitation answered"); n != 5 {
		t.Errorf("%d lines of answered elicitations in the host's log, want 5:\n%s", n, log)
	}
	if n := strings.Count(log, "elicitation declined: the caller cannot be asked"); n != 2 {
		t.Errorf("%d lines of elicitations declined for a caller that cannot be asked, want 2:\n%s", n, log)
	}
	if strings.Contains(log, "Ann Example") {
		t.Errorf("the host's log carries the content of an answer:\n%s", log)
	}
	// Each call's audit line says which questions were asked and how they
	// were answered, never what.
	want := []string{
		`[{"mode":"form","action":"accept"}]`, `[{"mode":"form","action":"decline"}]`, `[{"mode":"form","action":"cancel"}]`,
		`[{"mode":"url","action":"accept"}]`, `[{"mode":"url","action":"decline"}]`,
		`[{"mode":"form","action":"decline"}]`, `[{"mode":"url","action":"decline"}]`,
	}
	var got []string
	waitFor(t, 30*time.Second, "an audit line for each call", func() bool {
		got = elicitationsAudited(t, dir)
		return len(got) >= len(want)
	})
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("the audit lines record the questions as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if data, err := os.ReadFile(filepath.Join(dir, "run", "audit.log")); err != nil || bytes.Contains(data, []byte("Ann Example")) {
		t.Errorf("the audit log cannot be read (%v) or carries the content of an answer:\n%s", err, data)
	}
}

// elicitationsAudited is the elicitations member of each audit line in
// dir's run/audit.log of a call of the server's elicitation tools.
func elicitationsAudited(t *testing.T, dir string) []string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, "run", "audit.log"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var l struct {
			Tool         string          `json:"tool"`
			Elicitations json.RawMessage `json:"elicitations"`
		}
		if len(line) == 0 {
			continue
		}
		if err := json.Unmarshal(line, &l); err != nil {
			t.Fatalf("audit line %s: %v", line, err)
		}
		if strings.HasPrefix(l.Tool, "ev_trigger-") {
			out = append(out, string(l.Elicitations))
		}
	}
	return out
}
