package e2e

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// shippedCopy lays the shipped config.hcl out in a folder of its own as
// the repository has it, with bin/ the test's built binaries, corpus/ the
// repository's and run/sandbox a fresh copy of sandbox.example, and
// returns the config's path. edit, when set, changes the file's text.
func shippedCopy(t *testing.T, edit func(string) string) string {
	t.Helper()
	dir := t.TempDir()
	src, err := os.ReadFile("../config.hcl")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	if edit != nil {
		text = edit(text)
	}
	config := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(config, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(bins.Dir(), filepath.Join(dir, "bin")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(corpusDir(t), filepath.Join(dir, "corpus")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "run"), 0o700); err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../sandbox.example")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("cp", "-R", example, filepath.Join(dir, "run", "sandbox")).CombinedOutput(); err != nil {
		t.Fatalf("copy the sandbox: %v %s", err, b)
	}
	return config
}

func policyFile(t *testing.T) string {
	t.Helper()
	p, err := filepath.Abs("../policy_test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestShippedPolicyTest runs the shipped policy_test.hcl against the
// shipped config.hcl through the real binaries: every case passes, the
// JUnit file says so, and nothing was audited as a call.
func TestShippedPolicyTest(t *testing.T) {
	needShippedDeployment(t)
	config := shippedCopy(t, nil)
	junit := filepath.Join(t.TempDir(), "junit.xml")
	out, errOut, code := cli(t, "test", "-c", config, "--junit", junit, policyFile(t))
	if code != 0 || !strings.Contains(out, "PASS\nok  \t") || strings.Contains(out, "--- FAIL") {
		t.Fatalf("host test: exit %d\n%s\n%s", code, out, errOut)
	}
	var suites junitSuites
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	if err := xml.Unmarshal(b, &suites); err != nil || len(suites.Suites) != 1 || suites.Suites[0].Failures != 0 || suites.Suites[0].Tests < 10 {
		t.Fatalf("junit: %v %+v", err, suites)
	}
	log, err := os.ReadFile(filepath.Join(filepath.Dir(config), "run", "audit", "audit.log"))
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	if len(log) != 0 {
		t.Errorf("explained cases were audited:\n%s", log)
	}
}

// TestShippedPolicyTestCatchesABrokenRule is the test of the test: with
// the outside-the-sandbox rule weakened (".." no longer denied) or
// ask_destructive dropped, policy_test.hcl fails, naming the cases that
// caught it, file:line, as go test would; --json says the same.
func TestShippedPolicyTestCatchesABrokenRule(t *testing.T) {
	needShippedDeployment(t)
	for _, tc := range []struct {
		name, from, to string
		failing        []string
	}{
		{name: "a parent path let through", from: `path_prefix = ["/", ".."]`, to: `path_prefix = ["/"]`,
			failing: []string{"a parent path is denied"}},
		{name: "destructive tools not asked about", from: "ask_destructive = true", to: "ask_destructive = false",
			failing: []string{"deleting a file is asked about", "writing a file is asked about"}},
		{name: "a secrets pattern lost", from: `pattern = ["(?i)secret", "(?i)password"]`, to: `pattern = ["(?i)secret"]`,
			failing: []string{"a search for passwords is denied"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			config := shippedCopy(t, func(s string) string {
				if !strings.Contains(s, tc.from) {
					t.Fatalf("config.hcl no longer holds %q", tc.from)
				}
				return strings.Replace(s, tc.from, tc.to, 1)
			})
			out, errOut, code := cli(t, "test", "-c", config, policyFile(t))
			if code != exitFailed || !strings.Contains(out, "FAIL\nFAIL\t") {
				t.Fatalf("host test: exit %d, want %d\n%s\n%s", code, exitFailed, out, errOut)
			}
			for _, name := range tc.failing {
				if !strings.Contains(out, "--- FAIL: "+name+" (") {
					t.Errorf("case %q did not fail:\n%s", name, out)
				}
			}
			if got := strings.Count(out, "--- FAIL: "); got != len(tc.failing) {
				t.Errorf("%d cases failed, want %d:\n%s", got, len(tc.failing), out)
			}
			if !strings.Contains(out, policyFile(t)+":") {
				t.Errorf("a failure does not say file:line:\n%s", out)
			}
			jout, _, _ := cli(t, "test", "--json", "-c", config, policyFile(t))
			var rep testReport
			if err := json.Unmarshal([]byte(jout), &rep); err != nil || rep.OK || rep.Failed != len(tc.failing) {
				t.Errorf("--json: %v %+v", err, rep)
			}
		})
	}
}

// TestTestFileErrors: a broken case file is reported as file:line:col,
// every problem at once, and nothing is started.
func TestTestFileErrors(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	cases := filepath.Join(dir, "cases.hcl")
	if err := os.WriteFile(cases, []byte(`case "a" {
  tool   = "read_file"
  expect = "MAYBE"
}

case "b" {
  tool      = "read_file"
  arguments = "notes"
  expect    = "BLOCKED"
}

case "a" {
  tool   = "read_file"
  expect = "ALLOWED"
  colour = "red"
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	_, errOut, code := cli(t, "test", "-c", filepath.Join(dir, "missing.hcl"), cases)
	if code != exitUsage {
		t.Fatalf("exit %d, want %d\n%s", code, exitUsage, errOut)
	}
	for _, want := range []string{
		cases + `:1:1: case "a": expect = "MAYBE" is not an outcome`,
		cases + `:6:1: case "b": BLOCKED needs execute = true`,
		cases + `:6:1: case "b": arguments is not an object`,
		cases + `:15:3: Unsupported argument`,
		"nothing was run",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// TestGatewayPolicyTest runs examples/mcp-gateway_test.hcl against the
// gateway example, laid out as in the repository, through the real
// binaries and the npm filesystem server the example starts with npx.
func TestGatewayPolicyTest(t *testing.T) {
	needShippedDeployment(t)
	testenv.LookPath(t, "npx")
	dir := t.TempDir()
	for _, d := range []string{"examples", "bin/plugins", "run"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{"safety", "audit"} {
		if err := os.Symlink(pluginPath(p), filepath.Join(dir, "bin", "plugins", p)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(bins.Build(t, "plugins/mcp", module+"plugins/mcp"), filepath.Join(dir, "bin", "plugins", "mcp")); err != nil {
		t.Fatal(err)
	}
	example, err := filepath.Abs("../sandbox.example")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := exec.Command("cp", "-R", example, filepath.Join(dir, "run", "sandbox")).CombinedOutput(); err != nil {
		t.Fatalf("copy the sandbox: %v %s", err, b)
	}
	src, err := os.ReadFile("../examples/mcp-gateway.hcl")
	if err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "examples", "mcp-gateway.hcl")
	// host test serves no MCP: the example's port is not bound.
	if err := os.WriteFile(config, src, 0o644); err != nil {
		t.Fatal(err)
	}
	cases, err := filepath.Abs("../examples/mcp-gateway_test.hcl")
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, code := cli(t, "test", "-c", config, cases)
	if code != 0 || strings.Contains(out, "--- FAIL") {
		t.Fatalf("host test: exit %d\n%s\n%s", code, out, errOut)
	}
}
