package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/shared/secrets/fake"
)

// replayTweaks is the shipped deployment with the audit recording redacted
// arguments and rules, more safety deny blocks.
func replayTweaks(rules string) deploymentTweaks {
	return deploymentTweaks{safetyRules: rules}
}

// replayConfig writes the deployment into dir, its audit recording
// redacted arguments.
func replayConfig(t *testing.T, dir, rules string) string {
	t.Helper()
	path := deploymentFileWith(t, dir, replayTweaks(rules))
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
	return path
}

const (
	noTodo = `    deny "no-todo" {
      tools       = ["read_file"]
      path_prefix = ["todo.md"]
    }
`
	noList = `    deny "no-list" {
      tools = ["list_dir"]
    }
`
)

// TestReplayEndToEnd records a few hundred varied calls (tools, arguments,
// credentials in them, outcomes) with record_arguments = "redacted" and
// replays the log through `host replay` against the same policy (no
// change), a tightened one (exactly the calls a host running it explains
// as DENIED, checked one by one) and a loosened one; --fail-on loosen
// fails for the loosened one only.
func TestReplayEndToEnd(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	config := replayConfig(t, dir, noTodo)
	h := startFaultHostWith(t, dir, config)
	token := fake.New(3).GitHubToken("ghp_")

	type call struct{ tool, args string }
	var calls []call
	for i := range 60 {
		calls = append(calls,
			call{"read_file", `{"path":"notes.md"}`},
			call{"read_file", `{"path":"todo.md"}`},
			call{"list_dir", fmt.Sprintf(`{"path":"%s"}`, []string{".", "sub", "../x"}[i%3])},
			call{"search", fmt.Sprintf(`{"q":"reload %d"}`, i)},
			call{"write_file", fmt.Sprintf(`{"path":"out%d.md","content":"key %s"}`, i%4, token)},
		)
		if i%10 == 0 {
			calls = append(calls, call{"delete_file", `{"path":"out0.md"}`}, call{"no_such_tool", `{}`})
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, c := range calls {
		if _, err := h.client.Call(ctx, c.tool, json.RawMessage(c.args), nil); err != nil {
			t.Fatalf("call %s: %v", c.tool, err)
		}
	}
	logPath := filepath.Join(dir, "run", "audit", "audit.log")
	logText := waitAuditLines(t, logPath, len(calls))
	if strings.Contains(logText, token) {
		t.Fatal("a credential of the arguments is in the audit log")
	}
	if !strings.Contains(logText, `[redacted: github-token]`) {
		t.Fatal("the audit log has no redacted argument")
	}
	if out, err := exec.Command(pluginPath("audit"), "verify", logPath).CombinedOutput(); err != nil {
		t.Fatalf("audit verify: %v\n%s", err, out)
	}

	replayJSON := func(candidate string, failOn string) (replayReport, int) {
		t.Helper()
		args := []string{"replay", "--json", "-c", candidate, logPath}
		if failOn != "" {
			args = append(args, "--fail-on", failOn)
		}
		out, stderr, code := cli(t, args...)
		var rep replayReport
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			t.Fatalf("host replay: not JSON (exit %d): %s\n%s", code, out, stderr)
		}
		return rep, code
	}

	// (a) The same policy: nothing changes. The write_file calls, which
	// the secrets rule denied for the credential the audit removed, are
	// not judged, and said so; every other call is.
	same, code := replayJSON(config, "any")
	if code != 0 || same.Changed != 0 || same.Judged != len(calls)-60 || len(same.NotJudged) != 60 {
		t.Fatalf("replay under the same policy: exit %d, %d judged of %d, %d changed: %+v, %d not judged",
			code, same.Judged, len(calls), same.Changed, same.Changes, len(same.NotJudged))
	}
	for _, c := range same.NotJudged {
		if c.Tool != "write_file" || !strings.Contains(c.Reason, "arguments redacted") {
			t.Fatalf("not judged: %+v", c)
		}
	}
	t.Logf("replay throughput: %.0f calls/s (%d calls in %.3fs)", same.CallsPerSec, same.Judged, same.Seconds)

	// (b) Tightened: no-list added.
	tightDir := t.TempDir()
	tight := replayConfig(t, tightDir, noTodo+noList)
	rep, code := replayJSON(tight, "loosen")
	if code != 0 || rep.Loosened != 0 || rep.Tightened == 0 {
		t.Fatalf("replay under the tightened policy: exit %d, %d loosened, %d tightened", code, rep.Loosened, rep.Tightened)
	}
	// A host running the tightened policy explains each recorded call:
	// the changed calls are exactly those it denies that were not denied.
	th := startFaultHostWith(t, tightDir, tight)
	recorded := map[uint64]string{} // seq → recorded outcome
	for _, c := range append(slices.Clone(rep.Changes), same.Changes...) {
		recorded[c.Seq] = c.Was
	}
	var want []uint64
	for _, text := range strings.Split(strings.TrimSpace(logText), "\n") {
		var l struct {
			Seq       uint64          `json:"seq"`
			Tool      string          `json:"tool"`
			Code      string          `json:"code"`
			DecidedBy string          `json:"decided_by"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if err := json.Unmarshal([]byte(text), &l); err != nil {
			t.Fatal(err)
		}
		x, err := th.client.Explain(ctx, admin.ExplainRequest{Tool: l.Tool, Arguments: l.Arguments})
		if err != nil {
			t.Fatal(err)
		}
		wasDenied := l.Code == "DENIED" || l.Code == "UNKNOWN_TOOL" || l.Code == "INVALID_ARGUMENTS"
		if x.Outcome == "DENIED" && !wasDenied {
			want = append(want, l.Seq)
		}
	}
	var got []uint64
	for _, c := range rep.Changes {
		if c.Now != "DENIED" {
			t.Errorf("tightened: seq %d (%s) is now %s, not denied", c.Seq, c.Tool, c.Now)
		}
		if c.NowBy != "safety" || c.Rule != "no-list" {
			t.Errorf("tightened: seq %d denied by %s rule %q, want safety no-list", c.Seq, c.NowBy, c.Rule)
		}
		got = append(got, c.Seq)
	}
	if len(want) == 0 || !slices.Equal(got, want) {
		t.Fatalf("tightened: replay changed seqs %v\nexplain denies %v", got, want)
	}
	// A changed call becomes a case of host test (from_audit).
	caseFile := filepath.Join(tightDir, "replayed_test.hcl")
	cases := fmt.Sprintf(`case "listing is retired" {
  from_audit = %q
  seq        = %d
  expect     = "DENIED"
  rule       = "no-list"
}
`, logPath, got[0])
	if err := os.WriteFile(caseFile, []byte(cases), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, stderr, code := cli(t, "test", "-c", tight, caseFile); code != 0 || !strings.Contains(out, "--- PASS: listing is retired") {
		t.Errorf("host test of a replayed call under the tightened policy: exit %d\n%s%s", code, out, stderr)
	}
	if out, _, code := cli(t, "test", "-c", config, caseFile); code != exitFailed || !strings.Contains(out, "--- FAIL: listing is retired") {
		t.Errorf("host test of a replayed call under the recorded policy: exit %d\n%s", code, out)
	}
	if len(rep.Groups) != 1 || rep.Groups[0].Direction != nowDenied || rep.Groups[0].Count != len(want) || len(rep.Groups[0].Examples) != maxExamples {
		t.Errorf("tightened: groups %+v", rep.Groups)
	}

	// (c) Loosened: no-todo dropped; --fail-on loosen exits 6, and the
	// human output names the rule that no longer decides.
	loose := replayConfig(t, t.TempDir(), "")
	rep, code = replayJSON(loose, "loosen")
	if code != exitReplayChanged || rep.Loosened != 60 || rep.Tightened != 0 {
		t.Fatalf("replay under the loosened policy: exit %d, %d loosened, %d tightened", code, rep.Loosened, rep.Tightened)
	}
	for _, c := range rep.Changes {
		if c.Tool != "read_file" || !strings.Contains(c.Arguments, "todo.md") || c.Now != "ALLOWED" {
			t.Errorf("loosened: %+v", c)
		}
	}
	out, _, code := cli(t, "replay", "-c", loose, logPath)
	if code != 0 || !strings.Contains(out, "\nnow allowed (was decided by safety): 60 calls\n") {
		t.Errorf("replay, loosened, for a person: exit %d\n%s", code, out)
	}
	t.Logf("host replay, loosened:\n%s", out)
	out, _, code = cli(t, "replay", "-c", tight, "--fail-on", "tighten", logPath)
	if code != exitReplayChanged || !strings.Contains(out, `now denied (by safety, rule "no-list"): 40 calls`) {
		t.Errorf("replay, tightened, for a person: exit %d\n%s", code, out)
	}
	t.Logf("host replay, tightened:\n%s", out)
}
