package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/plugins/audit/auditlog"
)

// withRecordedArguments makes the audit block of the deployment file at
// path record redacted arguments.
func withRecordedArguments(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const at = `    path = "run/audit/audit.log"` + "\n"
	if !strings.Contains(string(b), at) {
		t.Fatal("the deployment's audit block changed: no path line to add record_arguments after")
	}
	b = []byte(strings.Replace(string(b), at, at+`    record_arguments = "redacted"`+"\n", 1))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

const (
	// readersNoTodo is the recorded policy's group rule.
	readersNoTodo = `    deny "readers-no-todo" {
      tools       = ["read_file"]
      path_prefix = ["todo.md"]
      callers     = ["group:readers"]
    }
`
	// The tightened candidate's two group rules: one on a tool, one on
	// an argument.
	readersNoList = `    deny "readers-no-list" {
      tools   = ["list_dir"]
      callers = ["group:readers"]
    }
`
	writersNoNotes = `    deny "writers-no-notes" {
      tools       = ["read_file"]
      path_prefix = ["notes.md"]
      callers     = ["group:writers"]
    }
`
)

// TestReplayGroupsEndToEnd records calls made over MCP with three API
// keys (principals in groups: readers, writers, none) under a policy with
// a rule on a group, and replays the log with `host replay`: under the
// same policy nothing changes (the rule selects the readers again, from
// the attributes the audit line records); under a policy with group rules
// tightened, exactly the calls a host running it explains as DENIED for
// each call's principal, checked one by one, and no call of another
// group; under one without the recorded group rule, the readers' denied
// calls are now allowed. A log whose lines lack the attributes (written
// before they were recorded) is replayed as for principals without any,
// and the report says so.
func TestReplayGroupsEndToEnd(t *testing.T) {
	needShippedDeployment(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	dir := t.TempDir()
	keysFile := filepath.Join(dir, "keys.hcl")
	newKey := func(name string, args ...string) string {
		out, stderr, code := cli(t, append([]string{"key", "add", name, "-f", keysFile}, args...)...)
		if code != 0 || !strings.HasPrefix(out, "pk_") {
			t.Fatalf("host key add %s: exit %d %q %s", name, code, out, stderr)
		}
		return strings.TrimSpace(out)
	}
	type principal struct {
		id, kind string
		attrs    []string
		key      string
	}
	principals := []*principal{
		{id: "reader-bot", kind: "agent", attrs: []string{"group:readers"}},
		{id: "ann", kind: "user", attrs: []string{"group:writers", "team:docs"}},
		{id: "cron", kind: "agent", attrs: []string{"team:ops"}},
	}
	for _, p := range principals {
		args := []string{"--kind", p.kind}
		for _, a := range p.attrs {
			args = append(args, "--attribute", a)
		}
		p.key = newKey(p.id, args...)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	config := deploymentFileWith(t, dir, deploymentTweaks{
		host:        fmt.Sprintf("  mcp = \"127.0.0.1:%d\"\n  mcp_auth {\n    keys = %q\n  }\n", port, keysFile),
		safetyRules: readersNoTodo,
	})
	withRecordedArguments(t, config)
	running := startHost(t, config, len(shippedPlugins))
	endpoint := fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
	transport := http.DefaultTransport.(*http.Transport).Clone()
	defer transport.CloseIdleConnections()

	type call struct{ tool, args string }
	var calls []call
	for i := range 10 {
		calls = append(calls,
			call{"read_file", `{"path":"notes.md"}`},
			call{"read_file", `{"path":"todo.md"}`},
			call{"list_dir", fmt.Sprintf(`{"path":"%s"}`, []string{".", "./"}[i%2])},
			call{"search", fmt.Sprintf(`{"q":"plan %d"}`, i)},
		)
	}
	for _, p := range principals {
		client := mcp.NewClient(&mcp.Implementation{Name: "replay-agent", Version: "1"}, nil)
		cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint,
			HTTPClient: &http.Client{Transport: bearer{p.key, transport}}}, nil)
		if err != nil {
			t.Fatalf("connect with %s's key: %v\n%s", p.id, err, running.stderr)
		}
		waitTools(t, ctx, cs, "read_file", "list_dir", "search")
		for _, c := range calls {
			r := mcpCall(t, ctx, cs, c.tool, c.args)
			denied := p.id == "reader-bot" && strings.Contains(c.args, "todo.md")
			if r.IsError != denied {
				t.Errorf("%s %s %s: error %v (%s), want %v", p.id, c.tool, c.args, r.IsError, toolText(r), denied)
			}
		}
		cs.Close()
	}
	n := len(calls) * len(principals)
	logPath := filepath.Join(dir, "run", "audit", "audit.log")
	logText := waitAuditLines(t, logPath, n)
	for _, p := range principals {
		attrs, _ := json.Marshal(p.attrs)
		want := fmt.Sprintf(`"principal":%q,"principal_kind":%q,`, p.id, p.kind)
		if !regexp.MustCompile(regexp.QuoteMeta(want) + `.*"principal_attributes":` + regexp.QuoteMeta(string(attrs)) + `,"prev"`).MatchString(logText) {
			t.Errorf("no audit line for %s with principal_attributes %s:\n%s", p.id, attrs, logText)
		}
	}
	if out, stderr, code := auditCmd(t, "verify", logPath); code != 0 {
		t.Fatalf("host audit verify: exit %d\n%s%s", code, out, stderr)
	}

	replayJSON := func(candidate, log string) replayReport {
		t.Helper()
		out, stderr, code := cli(t, "replay", "--json", "-c", candidate, log)
		var rep replayReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
			t.Fatalf("host replay: exit %d, %v: %s\n%s", code, err, out, stderr)
		}
		return rep
	}
	candidate := func(rules string) string {
		d := t.TempDir()
		path := deploymentFileWith(t, d, deploymentTweaks{safetyRules: rules})
		withRecordedArguments(t, path)
		return path
	}

	// (a) The same policy: nothing changes, readers included.
	same := replayJSON(candidate(readersNoTodo), logPath)
	if same.Judged != n || same.Changed != 0 || same.WithoutAttributes != 0 {
		t.Fatalf("the same policy: %d judged of %d, %d changed %+v, %d without attributes, not judged %+v",
			same.Judged, n, same.Changed, same.Changes, same.WithoutAttributes, same.NotJudged)
	}
	t.Logf("replay throughput: %.0f calls/s (%d calls in %.3fs)", same.CallsPerSec, same.Judged, same.Seconds)

	// (b) Tightened for two groups: exactly the calls a host running the
	// candidate denies, for each call's principal with its attributes.
	tightRules := readersNoTodo + readersNoList + writersNoNotes
	tight := candidate(tightRules)
	rep := replayJSON(tight, logPath)
	if rep.Loosened != 0 || rep.Tightened != 2*len(calls)/4 {
		// the readers' list_dir calls and the writers' notes.md reads
		t.Errorf("tightened: %d loosened, %d tightened", rep.Loosened, rep.Tightened)
	}
	th := startFaultHostWith(t, filepath.Dir(tight), tight)
	var want []uint64
	for _, text := range strings.Split(strings.TrimSpace(logText), "\n") {
		l, err := auditlog.ParseLine([]byte(text))
		if err != nil {
			t.Fatal(err)
		}
		x, err := th.client.Explain(ctx, admin.ExplainRequest{Tool: l.Tool, Arguments: l.Arguments,
			As: &admin.Principal{ID: l.Principal, Kind: l.PrincipalKind, Attributes: l.PrincipalAttributes}})
		if err != nil {
			t.Fatal(err)
		}
		if x.Outcome == "DENIED" && l.Code != "DENIED" {
			want = append(want, l.Seq)
		}
	}
	var got []uint64
	rules := map[string]int{}
	for _, c := range rep.Changes {
		if c.Now != "DENIED" || c.NowBy != "safety" {
			t.Errorf("tightened: seq %d %s for %s is now %s by %s", c.Seq, c.Tool, c.Principal, c.Now, c.NowBy)
		}
		rules[c.Principal+" "+c.Rule]++
		got = append(got, c.Seq)
	}
	if len(want) != 2*len(calls)/4 || !slices.Equal(got, want) {
		t.Fatalf("tightened: replay changed seqs %v\nexplain denies %v", got, want)
	}
	if wantRules := map[string]int{"agent:reader-bot readers-no-list": 10, "user:ann writers-no-notes": 10}; !mapsEqual(rules, wantRules) {
		t.Errorf("tightened: changes by principal and rule %v, want %v", rules, wantRules)
	}
	out, _, code := cli(t, "replay", "-c", tight, "--fail-on", "tighten", logPath)
	if code != exitReplayChanged || !strings.Contains(out, `now denied (by safety, rule "readers-no-list"): 10 calls`) ||
		!strings.Contains(out, "for agent:reader-bot (group:readers): was ALLOWED") {
		t.Errorf("replay, tightened, for a person: exit %d\n%s", code, out)
	}
	t.Logf("host replay, group rules tightened:\n%s", out)

	// (c) Loosened: the readers' rule dropped; their todo.md reads are
	// now allowed, nobody else's calls change.
	loose := replayJSON(candidate(""), logPath)
	if loose.Loosened != len(calls)/4 || loose.Tightened != 0 {
		t.Fatalf("loosened: %d loosened, %d tightened: %+v", loose.Loosened, loose.Tightened, loose.Changes)
	}
	for _, c := range loose.Changes {
		if c.Principal != "agent:reader-bot" || !strings.Contains(c.Arguments, "todo.md") || c.Now != "ALLOWED" {
			t.Errorf("loosened: %+v", c)
		}
	}

	// (d) A log without the attributes (as written before they were
	// recorded): judged as for principals without any, and said so, so
	// the same policy no longer denies the readers' todo.md reads.
	var old strings.Builder
	strip := regexp.MustCompile(`,"principal_attributes":\[[^\]]*\]`)
	for _, text := range strings.SplitAfter(logText, "\n") {
		old.WriteString(strip.ReplaceAllString(text, ""))
	}
	oldLog := filepath.Join(t.TempDir(), "old.log")
	if err := os.WriteFile(oldLog, []byte(old.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	stale := replayJSON(candidate(readersNoTodo), oldLog)
	if stale.WithoutAttributes != n || stale.Loosened != len(calls)/4 || stale.Tightened != 0 {
		t.Fatalf("old lines: %d without attributes, %d loosened, %d tightened", stale.WithoutAttributes, stale.Loosened, stale.Tightened)
	}
	out, _, _ = cli(t, "replay", "-c", candidate(readersNoTodo), oldLog)
	if !strings.Contains(out, fmt.Sprintf("%d calls judged as for a principal without attributes", n)) {
		t.Errorf("replay of old lines does not say their attributes are unknown:\n%s", out)
	}

	// (e) A log without arguments (record_arguments off): under the
	// tightened candidate, the calls whose every call is now denied for
	// their principal whatever the arguments (the readers' list_dir, by a
	// rule on the tool and the group) are judged; every other call is
	// listed as not judged, saying why.
	var bare strings.Builder
	stripArgs := regexp.MustCompile(`,"arguments":\{[^}]*\}`)
	for _, text := range strings.SplitAfter(logText, "\n") {
		bare.WriteString(stripArgs.ReplaceAllString(text, ""))
	}
	bareLog := filepath.Join(t.TempDir(), "bare.log")
	if err := os.WriteFile(bareLog, []byte(bare.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	noArgs := replayJSON(tight, bareLog)
	var readersList []uint64
	for _, c := range rep.Changes {
		if c.Rule == "readers-no-list" {
			readersList = append(readersList, c.Seq)
		}
	}
	var judged []uint64
	for _, c := range noArgs.Changes {
		if !c.ArgumentsUnrecorded || c.Now != "DENIED" || c.Rule != "readers-no-list" {
			t.Errorf("without arguments: %+v", c)
		}
		judged = append(judged, c.Seq)
	}
	if noArgs.Judged != len(readersList) || noArgs.WithoutArguments != len(readersList) || !slices.Equal(judged, readersList) ||
		len(noArgs.NotJudged) != n-len(readersList) {
		t.Fatalf("without arguments: %d judged (%d without arguments), changed %v, want %v; %d not judged",
			noArgs.Judged, noArgs.WithoutArguments, judged, readersList, len(noArgs.NotJudged))
	}
	for _, c := range noArgs.NotJudged {
		if !strings.Contains(c.Reason, "arguments not recorded") || !strings.Contains(c.Reason, "depends on its arguments") {
			t.Errorf("not judged without arguments: %+v", c)
		}
	}
	out, _, _ = cli(t, "replay", "-c", tight, bareLog)
	if !strings.Contains(out, fmt.Sprintf("%d calls judged without their arguments", len(readersList))) {
		t.Errorf("replay without arguments, for a person:\n%s", out)
	}
	t.Logf("host replay of a log without arguments, group rules tightened:\n%s", out)

	replayWithoutArguments(t, candidate, tightRules, bareLog, n, len(calls))
}

// opsAsked is an ask rule on a tool and a group: every search by team:ops
// is asked about, whatever its arguments.
const opsAsked = `    ask "ops-search" {
      tools   = ["search"]
      callers = ["team:ops"]
    }
`

// replayWithoutArguments replays the log stripped of its arguments
// (bareLog, n calls, perPrincipal of each of the three principals: a
// quarter each of read_file notes.md, read_file todo.md, list_dir and
// search) under the tightened rules with an ask rule for team:ops's
// searches, and without the secrets check on arguments (a credential in
// any argument would deny any call, so with it no call is the same for
// every argument set). The candidate's answer holds for any arguments
// for every search (allowed, or asked for team:ops) and for the readers'
// list_dir (denied): those calls are judged; read_file and the others'
// list_dir meet the path rules (outside-root, the group rules on paths),
// and are listed as not judged, naming the rule that looks at the
// arguments.
func replayWithoutArguments(t *testing.T, candidate func(string) string, tightRules, bareLog string, n, perPrincipal int) {
	t.Helper()
	path := candidate(tightRules + opsAsked)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const on = `arguments = "deny"`
	if !strings.Contains(string(b), on) {
		t.Fatal("the deployment's secrets block changed: no arguments check to turn off")
	}
	if err := os.WriteFile(path, []byte(strings.Replace(string(b), on, `arguments = "off"`, 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	out, stderr, code := cli(t, "replay", "--json", "-c", path, bareLog)
	var rep replayReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != 0 {
		t.Fatalf("host replay: exit %d, %v: %s\n%s", code, err, out, stderr)
	}
	searches, lists := perPrincipal/4, perPrincipal/4
	wantJudged := 3*searches + lists // every search, the readers' list_dir
	if rep.Judged != wantJudged || rep.WithoutArguments != wantJudged || len(rep.NotJudged) != n-wantJudged {
		t.Fatalf("without arguments, the secrets check off: %d judged (%d without arguments), want %d; %d not judged %+v",
			rep.Judged, rep.WithoutArguments, wantJudged, len(rep.NotJudged), rep.NotJudged)
	}
	// Changed: the readers' list_dir now denied, ops's searches now asked;
	// the other searches judged allowed, as they were.
	changes := map[string]int{}
	for _, c := range rep.Changes {
		if !c.ArgumentsUnrecorded {
			t.Errorf("judged with arguments from a log without them: %+v", c)
		}
		changes[c.Tool+" "+c.Principal+" "+c.Now+" "+c.Rule]++
	}
	if want := map[string]int{"list_dir agent:reader-bot DENIED readers-no-list": lists, "search agent:cron ASK ops-search": searches}; !mapsEqual(changes, want) {
		t.Errorf("without arguments, changes %v, want %v", changes, want)
	}
	if rep.Unchanged != 2*searches || rep.Tightened != lists+searches || rep.Loosened != 0 {
		t.Errorf("without arguments: %d unchanged (want the %d searches of the others, allowed), %d tightened, %d loosened",
			rep.Unchanged, 2*searches, rep.Tightened, rep.Loosened)
	}
	for _, c := range rep.NotJudged {
		if c.Tool == "search" || c.Tool == "list_dir" && c.Principal == "agent:reader-bot" ||
			!strings.Contains(c.Reason, "depends on its arguments") || !strings.Contains(c.Reason, `safety rule "outside-root"`) {
			t.Errorf("not judged: %+v", c)
		}
		if c.Tool == "read_file" && c.Principal == "agent:reader-bot" && !strings.Contains(c.Reason, `safety rule "readers-no-todo"`) {
			t.Errorf("a reader's read_file, not judged, does not name the group's path rule: %+v", c)
		}
	}
	text, _, _ := cli(t, "replay", "-c", path, bareLog)
	if !strings.Contains(text, fmt.Sprintf("%d calls judged without their arguments", wantJudged)) ||
		!strings.Contains(text, fmt.Sprintf(`now asked (by safety, rule "ops-search"): %d calls`, searches)) {
		t.Errorf("replay without arguments, for a person:\n%s", text)
	}
	t.Logf("host replay of a log without arguments, an ask rule added, the secrets check off:\n%s", text)
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
