package e2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/procs"
	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// pythonPlugins are the plugins written in Python in this repository.
var pythonPlugins = map[string]string{
	"search": "../plugins/search-python/plugin.py",
	"words":  "../plugins/python-example/plugin.py",
}

// pythonDeployment is the sample deployment with its search plugin replaced
// by the Python twin and the Python example plugin added, every plugin
// confined as in the sample.
func pythonDeployment(t *testing.T, dir, words string) string {
	t.Helper()
	abs := map[string]string{}
	for name, rel := range pythonPlugins {
		p, err := filepath.Abs(rel)
		if err != nil {
			t.Fatal(err)
		}
		abs[name] = p
	}
	sdk, err := filepath.Abs("../sdk/python")
	if err != nil {
		t.Fatal(err)
	}
	sandbox := func(name string) string {
		return fmt.Sprintf("  sandbox {\n    read = [%q, %q]\n  }\n", filepath.Dir(abs[name]), sdk)
	}
	return deploymentFileWith(t, dir, deploymentTweaks{
		search: abs["search"],
		plugin: func(name string) string {
			if name == "search" {
				return sandbox(name)
			}
			return ""
		},
		more: fmt.Sprintf("\nplugin \"words\" {\n  path = %q\n  config {\n%s  }\n%s}\n", abs["words"], words, sandbox("words")),
	})
}

// searches are the search calls both twins answer.
var searches = []string{
	`{"q":"hot reload","limit":2}`,
	`{"q":"guard"}`,
	`{"q":"+plugin -reload","limit":3}`,
	`{"q":"nothing-matches-this-word"}`,
	`{"q":"   "}`,
}

// TestPythonPluginsEndToEnd runs the sample deployment with two plugins in
// Python, through the real binaries: the Python twin of the search plugin
// answers every search exactly as the Go plugin does (same service calls
// to the index, same results and errors), the Python example's tool and
// guard work under the safety and audit plugins, a kill -9 of a Python
// plugin is a restart like any other, and no Python process outlives the
// host.
func TestPythonPluginsEndToEnd(t *testing.T) {
	needShippedDeployment(t)
	testenv.NeedPython(t)

	// The Go plugin's answers first.
	goDir := t.TempDir()
	goConfig := deploymentFile(t, goDir)
	goRun := startHost(t, goConfig, 5)
	var want []any
	for _, args := range searches {
		r, _ := callJSON(t, goConfig, "search", args)
		want = append(want, r)
	}
	stopRunning(t, goConfig, goRun)

	dir := t.TempDir()
	config := pythonDeployment(t, dir, "    max_words = 5\n    banned    = [\"confidential\"]\n")
	run := startHost(t, config, 6)
	st := statusOf(t, config)
	for _, name := range []string{"search", "words"} {
		if p := st[name]; p.Sandbox.State != st["index"].Sandbox.State {
			t.Errorf("%s sandbox = %+v, want %s like the Go plugins", name, p.Sandbox, st["index"].Sandbox.State)
		}
	}
	for i, args := range searches {
		r, _ := callJSON(t, config, "search", args)
		if got := any(r); !reflect.DeepEqual(normalize(t, got), normalize(t, want[i])) {
			t.Errorf("search %s:\n python: %s\n     go: %s", args, toJSON(r), toJSON(want[i]))
		}
	}

	r, _ := callJSON(t, config, "word_count", `{"text":"the quick brown fox"}`)
	if !r.OK || !jsonEqual(r.Value, `{"words":4,"distinct":4}`) {
		t.Errorf("word_count = %+v", r)
	}
	r, code := callJSON(t, config, "word_count", `{"text":"a Confidential memo"}`)
	if r.OK || r.Error == nil || r.Error.Code != "DENIED" || r.DecidedBy != "words" || !strings.Contains(r.Error.Message, "banned words: confidential") || code == 0 {
		t.Errorf("banned word: %+v (exit %d), want DENIED by words", r, code)
	}
	r, _ = callJSON(t, config, "word_count", `{"text":"one two three four five six"}`)
	if r.OK || r.Error == nil || r.DecidedBy != "words" || !strings.Contains(r.Error.Message, "6 words, over the limit of 5") {
		t.Errorf("too long: %+v, want DENIED by words", r)
	}
	r, _ = callJSON(t, config, "word_count", `{"text":7}`)
	if r.OK || r.Error == nil || r.Error.Code != "INVALID_ARGUMENTS" {
		t.Errorf("a number for text: %+v, want INVALID_ARGUMENTS", r)
	}

	// kill -9: the host restarts the Python plugin like any other.
	old := st["search"].PID
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var p admin.PluginStatus
	if !testkit.Eventually(30*time.Second, func() bool {
		p = statusOf(t, config)["search"]
		return p.State == "ACTIVE" && p.PID != old && p.PID > 0
	}) {
		t.Fatalf("search not back after kill -9: %+v\n%s", p, run.stderr)
	}
	if r, _ := callJSON(t, config, "search", searches[0]); !reflect.DeepEqual(normalize(t, r), normalize(t, want[0])) {
		t.Errorf("after the restart: %s", toJSON(r))
	}

	// Every call made is a line of the audit log, written once the call
	// has returned (the audit plugin observes in the background).
	waitAuditLines(t, filepath.Join(dir, "run", "audit", "audit.log"), len(searches)+4+1)
	stopRunning(t, config, run)
	if strings.Contains(run.stderr.String(), "[ERROR]") && !strings.Contains(run.stderr.String(), "killed") {
		t.Errorf("the host logged an error:\n%s", run.stderr)
	}
	for name, rel := range pythonPlugins {
		abs, _ := filepath.Abs(rel)
		if left := procs.Running(abs); len(left) > 0 {
			t.Errorf("%s: processes left after the host stopped: %v", name, left)
		}
	}
}

// TestPythonPluginConfigChecked: host validate checks a Python plugin's
// config block against the schema the SDK derives from its dataclass,
// pointing at the value.
func TestPythonPluginConfigChecked(t *testing.T) {
	needShippedDeployment(t)
	testenv.NeedPython(t)
	dir := t.TempDir()
	config := pythonDeployment(t, dir, "    max_words = \"many\"\n    colour    = \"red\"\n")
	_, stderr, code := cli(t, "validate", "-c", config)
	if code == 0 {
		t.Fatalf("validate accepted a bad config: %s", stderr)
	}
	for _, want := range []string{"config.hcl:", "max_words", "colour"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("validate's report lacks %q:\n%s", want, stderr)
		}
	}
}

// stopRunning stops a running host and waits for it.
func stopRunning(t *testing.T, config string, r *running) {
	t.Helper()
	if _, stderr, code := cli(t, "stop", "-c", config); code != 0 {
		t.Fatalf("stop: exit %d: %s", code, stderr)
	}
	select {
	case <-r.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the host did not stop\n%s", r.stderr)
	}
}

// normalize turns a value into plain JSON values, for comparing results.
func normalize(t *testing.T, v any) any {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	var out any
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if m, ok := out.(map[string]any); ok {
		delete(m, "id") // call ids differ between hosts
		delete(m, "duration_ns")
	}
	return out
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonEqual(a []byte, b string) bool {
	var x, y any
	return json.Unmarshal(a, &x) == nil && json.Unmarshal([]byte(b), &y) == nil && reflect.DeepEqual(x, y)
}

// TestPythonPluginSandboxWithoutSDK: a Python plugin whose sandbox does not
// grant the SDK's folder exits at start with a PermissionError on the SDK
// its plugkit link points to; the
// error validate prints names the sandbox as the likely cause and quotes
// what the plugin reported, before go-plugin's own lines.
func TestPythonPluginSandboxWithoutSDK(t *testing.T) {
	needShippedDeployment(t)
	testenv.NeedPython(t)
	dir := t.TempDir()
	words, err := filepath.Abs(pythonPlugins["words"])
	if err != nil {
		t.Fatal(err)
	}
	config := deploymentFileWith(t, dir, deploymentTweaks{
		more: fmt.Sprintf("\nplugin \"words\" {\n  path = %q\n  sandbox {\n    read = [%q]\n  }\n}\n", words, filepath.Dir(words)),
	})
	_, stderr, code := cli(t, "validate", "-c", config)
	if code == 0 {
		t.Fatalf("validate started a Python plugin that cannot import the SDK:\n%s", stderr)
	}
	for _, want := range []string{"plugin words", "runs in a sandbox", "outside its sandbox block", "PermissionError", "plugkit/__init__.py"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("validate's report lacks %q:\n%s", want, stderr)
		}
	}
}
