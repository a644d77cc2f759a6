package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// explainDeployment is the sample deployment plus the Python example
// plugin (a Python guard, declaring dry-run support) and the test plugin
// as "canary": a tool whose body, and a stage-1 listener, stage-3 and -4
// listeners and an observer which, whenever they run, write a line to a
// file of their own in logs. The test plugin does not declare dry-run
// support.
func explainDeployment(t *testing.T, dir, logs string) string {
	t.Helper()
	words, err := filepath.Abs(pythonPlugins["words"])
	if err != nil {
		t.Fatal(err)
	}
	sdk, err := filepath.Abs("../sdk/python")
	if err != nil {
		t.Fatal(err)
	}
	canary := buildTestPlugin(t)
	more := fmt.Sprintf(`
plugin "words" {
  path = %q
  config {
    banned = ["confidential"]
  }
  sandbox {
    read = [%q, %q]
  }
}

plugin "canary" {
  path = %q
  config {
    log_dir = %q
    spec = {
      name      = "canary"
      tools     = [{ name = "canary", description = "Writes the canary.", body = "echo", log = "body" }]
      pre       = [{ behaviour = "allow", log = "pre" }]
      exec      = [{ behaviour = "record", log = "exec" }]
      post      = [{ behaviour = "pass", log = "post" }]
      observers = [{ behaviour = "record", log = "observed" }]
    }
  }
  sandbox {
    write = [%q]
  }
}
`, words, filepath.Dir(words), sdk, canary, logs, logs)
	return deploymentFileWith(t, dir, deploymentTweaks{more: more})
}

func explainJSON(t *testing.T, config string, args ...string) (admin.Explanation, int) {
	t.Helper()
	out, errOut, code := cli(t, append([]string{"explain", "--json", "-c", config}, args...)...)
	var x admin.Explanation
	if err := json.Unmarshal([]byte(out), &x); err != nil {
		t.Fatalf("host explain %v: %v\nstdout: %s\nstderr: %s", args, err, out, errOut)
	}
	return x, code
}

// stepLines renders the steps of x as "stage plugin verdict rule".
func stepLines(x admin.Explanation) []string {
	var out []string
	for _, s := range x.Steps {
		line := fmt.Sprintf("%d %s %s", s.Stage, s.Plugin, s.Verdict)
		if s.Rule != "" {
			line += " " + s.Rule
		}
		if s.Decided {
			line += " *"
		}
		out = append(out, line)
	}
	return out
}

func explainAuditLines(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "run", "audit", "audit.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// TestExplainEndToEnd runs `host explain` against a running host through
// the real binaries: the safety plugin's remote stage-1 filter and remote
// guards and the Python example's guard each answer the dry run (with
// their rules), the canary plugin, which does not declare dry-run support,
// is reported not asked, and the exit codes say would-run, would-deny,
// would-ask and error. Explain runs nothing: the canary's body, its
// stage-1, 3 and 4 listeners and its observer leave no file, and the audit
// log gains no line; the same call made for real leaves all of them.
func TestExplainEndToEnd(t *testing.T) {
	needShippedDeployment(t)
	testenv.NeedPython(t)
	dir := t.TempDir()
	logs := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logs, 0o755); err != nil {
		t.Fatal(err)
	}
	config := explainDeployment(t, dir, logs)
	startHost(t, config, 7)
	// The host's own calls at start (if any) are done once it is active.
	auditBefore := explainAuditLines(t, dir)

	t.Run("would run: every listener asked or reported", func(t *testing.T) {
		x, code := explainJSON(t, config, "canary", `{"note":"hello"}`)
		if code != exitOK || x.Outcome != "ALLOWED" {
			t.Fatalf("exit %d, %+v", code, x)
		}
		want := []string{
			"1 safety pass",
			"1 canary not asked (does not support explain)",
			"2 safety pass secrets",
			"2 safety no interest", // outside-root names its tools
			"2 words no interest",
		}
		if got := stepLines(x); strings.Join(got, "\n") != strings.Join(want, "\n") {
			t.Errorf("steps:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
		}
	})
	t.Run("a Python guard denies", func(t *testing.T) {
		x, code := explainJSON(t, config, "word_count", `{"text":"a confidential note"}`)
		if code != exitWouldDeny || x.Outcome != "DENIED" || x.DecidedBy != "words" || x.Rule != "word-limits" {
			t.Fatalf("exit %d, %+v", code, x)
		}
		if !strings.Contains(x.Reason, "banned words: confidential") {
			t.Errorf("reason = %q", x.Reason)
		}
	})
	t.Run("a remote guard denies, naming its rule", func(t *testing.T) {
		out, _, code := cli(t, "explain", "-c", config, "read_file", `{"path":"../outside.txt"}`)
		if code != exitWouldDeny || !strings.Contains(out, `DENIED by safety, rule "outside-root": `) {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("the remote stage-1 filter asks", func(t *testing.T) {
		out, _, code := cli(t, "explain", "-c", config, "delete_file", `{"path":"notes.md"}`)
		if code != exitWouldAsk || !strings.Contains(out, `would ASK safety, rule "ask_destructive": delete_file is destructive`) {
			t.Fatalf("exit %d:\n%s", code, out)
		}
	})
	t.Run("--as another principal", func(t *testing.T) {
		x, _ := explainJSON(t, config, "--as", "user:alice", "--attribute", "group:readers", "search", `{"q":"x"}`)
		if x.Principal != "user:alice" {
			t.Errorf("principal = %q", x.Principal)
		}
	})
	t.Run("errors exit 2", func(t *testing.T) {
		if _, code := explainJSON(t, config, "no_such_tool"); code != exitUsage {
			t.Errorf("unknown tool: exit %d", code)
		}
		if _, _, code := cli(t, "explain", "-c", config, "--as", "alice", "search"); code != exitUsage {
			t.Errorf("bad --as: exit %d", code)
		}
	})

	// Nothing ran.
	if entries, err := os.ReadDir(logs); err != nil || len(entries) != 0 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Fatalf("explain ran something: %v %v", names, err)
	}
	if n := explainAuditLines(t, dir); n != auditBefore {
		t.Fatalf("the audit log went from %d to %d lines during explain", auditBefore, n)
	}

	// The same call made for real leaves every mark: the canaries work.
	r, code := callJSON(t, config, "canary", `{"note":"hello"}`)
	if code != 0 || !r.OK {
		t.Fatalf("call: exit %d, %+v", code, r)
	}
	for _, name := range []string{"body", "pre", "exec", "post", "observed"} {
		testkit.WaitFor(t, 10*time.Second, "the "+name+" file a real call leaves", func() bool {
			_, err := os.Stat(filepath.Join(logs, name+".log"))
			return err == nil
		})
	}
	testkit.WaitFor(t, 10*time.Second, "the audit line of a real call", func() bool { return explainAuditLines(t, dir) != auditBefore })
}
