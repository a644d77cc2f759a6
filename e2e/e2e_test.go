package e2e

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
	"github.com/plugkit-go/plugkit/sandbox"
	"github.com/plugkit-go/plugkit/shared/secrets/fake"
)

// The end-to-end tests build the real binaries once, write deployment files
// and run the CLI as a user would: `host validate`, `host run` in the
// background, then the client commands against it.

// bins are the host, the shipped plugins and the hostile test plugin,
// built in TestMain.
var bins = &testkit.Binaries{Prefix: "plugkit-e2e-", Targets: e2eTargets()}

func TestMain(m *testing.M) {
	// A test runs the test binary as an MCP client as another user.
	runAsMCPClient()
	runAsConsoleClient()
	runAsSlowLoris()
	runAsFlood()
	// Hosts that tests run in this process launch sandboxed plugins
	// through the test binary.
	sandbox.RunIfLauncher()
	// An error is reported by each test that needs the binaries.
	_ = bins.Prepare()
	code := m.Run()
	bins.Remove()
	os.Exit(code)
}

var shippedPlugins = []string{"index", "search", "files", "safety", "audit"}

const module = "github.com/plugkit-go/plugkit/"

// e2eTargets maps each binary's path under bins' folder to its package.
func e2eTargets() map[string]string {
	targets := map[string]string{"host": module + "cmd/host", hostilePath(""): module + "internal/testkit/hostileplugin"}
	for _, p := range shippedPlugins {
		targets[filepath.Join("plugins", p)] = module + "plugins/" + p
	}
	return targets
}

func needBinaries(t *testing.T) {
	t.Helper()
	bins.Need(t)
}

// needShippedDeployment is the start of a test of the shipped deployment
// through the real binaries: they are built, the platform is Linux (where it
// is tested), and the test leaves no goroutine behind.
func needShippedDeployment(t *testing.T) {
	t.Helper()
	needBinaries(t)
	if runtime.GOOS != "linux" {
		t.Skip("the shipped deployment is tested on Linux")
	}
	opts := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opts) })
}

func pluginPath(name string) string { return bins.Path(filepath.Join("plugins", name)) }

func corpusDir(t *testing.T) string {
	t.Helper()
	abs, err := filepath.Abs("../corpus")
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// cli runs the host binary and returns its stdout, stderr and exit code.
func cli(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	return cliIn(t, "", args...)
}

// cliIn runs the host binary in dir.
func cliIn(t *testing.T, dir string, args ...string) (string, string, int) {
	t.Helper()
	return testkit.Command(t, 60*time.Second, dir, bins.Path("host"), args...)
}

// deploymentFile writes the sample deployment into dir, pointing at the
// built plugins, and returns its path.
func deploymentFile(t *testing.T, dir string) string {
	t.Helper()
	return deploymentFileWith(t, dir, deploymentTweaks{})
}

// deploymentTweaks vary the sample deployment; the zero value is the sample.
type deploymentTweaks struct {
	// plugin returns lines to add to the named plugin's block, such as a
	// restart block or critical = true.
	plugin func(name string) string
	// safetyRules is added to safety's config block (more deny blocks).
	safetyRules string
	// host is added to the host block.
	host string
	// search, when set, is the search plugin's path (a twin of the
	// shipped one); more is added after the last plugin block.
	search, more string
}

// deploymentFileWith is deploymentFile with tweaks.
func deploymentFileWith(t *testing.T, dir string, tw deploymentTweaks) string {
	t.Helper()
	extra := func(name string) string {
		if tw.plugin == nil {
			return ""
		}
		return tw.plugin(name)
	}
	root := filepath.Join(dir, "workspace")
	if err := os.MkdirAll(root, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"notes.md": "first notes\n", "todo.md": "write the tests\n"} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "outside.txt"), []byte("not yours\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	hcl := fmt.Sprintf(`
host {
%[13]s  admin_socket     = "run/host.sock"
  approval_timeout = "5s"
  policy {
    timeout     = true
    concurrency = 8
  }
  sandbox {
    network = "none"
    limits {
      memory     = "1GiB"
      open_files = 256
    }
  }
}

plugin "index" {
  path = %[1]q
%[7]s  config {
    root = %[6]q
  }
  sandbox {
    read = [%[6]q]
  }
}

plugin "search" {
  path   = %[2]q
  inject = ["tools", "index"]
%[8]s}

plugin "files" {
  path = %[3]q
%[9]s  config {
    root = "workspace"
  }
  sandbox {
    read  = ["workspace"]
    write = ["workspace"]
  }
}

plugin "safety" {
  path     = %[4]q
  critical = true
%[10]s  config {
    deny "outside-root" {
      tools       = ["read_file", "write_file", "delete_file", "list_dir"]
      path_prefix = ["/", ".."]
      reason      = "paths must stay inside the workspace"
    }
%[12]s    ask_destructive = true
    secrets {
      arguments = "deny"
      results   = "redact"
    }
  }
}

plugin "audit" {
  path = %[5]q
%[11]s  config {
    path = "run/audit/audit.log"
  }
  sandbox {
    write = ["run/audit"]
  }
}
`, pluginPath("index"), pluginPath("search"), pluginPath("files"), pluginPath("safety"), pluginPath("audit"), corpusDir(t),
		extra("index"), extra("search"), extra("files"), extra("safety"), extra("audit"), tw.safetyRules, tw.host)
	if tw.search != "" {
		hcl = strings.Replace(hcl, fmt.Sprintf("path   = %q", pluginPath("search")), fmt.Sprintf("path   = %q", tw.search), 1)
	}
	path := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(path, []byte(hcl+tw.more), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// running starts `host run` and waits until every plugin is ACTIVE.
type running struct {
	cmd    *exec.Cmd
	stderr *testkit.Buffer
	done   chan struct{} // closed when the process has exited
	err    error         // its exit, once done is closed
}

func startHost(t *testing.T, config string, plugins int) *running {
	t.Helper()
	return startHostCmd(t, exec.Command(bins.Path("host"), "run", "-c", config), config, plugins)
}

// startHostCmd is startHost with a command of the caller's (extra
// descriptors, another environment).
func startHostCmd(t *testing.T, cmd *exec.Cmd, config string, plugins int) *running {
	t.Helper()
	// A process group of its own, as a service manager gives it: a test
	// can signal the host and its plugins at once.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r := &running{cmd: cmd, stderr: &testkit.Buffer{}, done: make(chan struct{})}
	cmd.Stdout = r.stderr
	cmd.Stderr = r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { r.err = cmd.Wait(); close(r.done) }()
	t.Cleanup(func() {
		select {
		case <-r.done:
			return
		default:
		}
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-r.done
		}
	})
	if !testkit.Eventually(60*time.Second, func() bool {
		select {
		case <-r.done:
			t.Fatalf("host run exited early: %v\n%s", r.err, r.stderr)
		default:
		}
		out, _, code := cli(t, "status", "--json", "-c", config)
		var st admin.Status
		return code == 0 && json.Unmarshal([]byte(out), &st) == nil && len(st.Plugins) == plugins && allActive(st)
	}) {
		t.Fatalf("the deployment did not become active in time\n%s", r.stderr)
	}
	return r
}

func allActive(st admin.Status) bool {
	for _, p := range st.Plugins {
		if p.State != "ACTIVE" {
			return false
		}
	}
	return true
}

func callJSON(t *testing.T, config, tool, args string) (admin.Result, int) {
	t.Helper()
	out, stderr, code := cli(t, "call", "--json", "-c", config, tool, args)
	var r admin.Result
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("host call %s %s: not JSON (exit %d): %q\nstderr: %s", tool, args, code, out, stderr)
	}
	return r, code
}

func TestSampleDeploymentEndToEnd(t *testing.T) {
	needBinaries(t)
	if runtime.GOOS != "linux" {
		t.Skip("the shipped deployment is tested on Linux")
	}
	dir := t.TempDir()
	config := deploymentFile(t, dir)

	out, stderr, code := cli(t, "validate", "-c", config)
	if code != 0 {
		t.Fatalf("validate: exit %d\n%s%s", code, out, stderr)
	}
	if !strings.Contains(out, "sandbox support: ") {
		t.Errorf("validate does not say what the kernel supports:\n%s", out)
	}
	host := startHost(t, config, len(shippedPlugins))

	t.Run("sandboxed", func(t *testing.T) {
		out, _, code := cli(t, "status", "--json", "-c", config)
		var st admin.Status
		if err := json.Unmarshal([]byte(out), &st); code != 0 || err != nil {
			t.Fatalf("status --json: exit %d, %v", code, err)
		}
		for _, p := range st.Plugins {
			// Enforced in full where the kernel can (warned otherwise).
			if p.Sandbox.State == "off" || (p.Sandbox.State == "partial" && !strings.Contains(stderr, "warning: Sandbox only partly enforced")) {
				t.Errorf("%s: sandbox %s", p.Name, p.Sandbox)
			}
		}
	})
	calls := 0

	t.Run("status", func(t *testing.T) {
		out, _, code := cli(t, "status", "-c", config)
		if code != 0 {
			t.Fatalf("status: exit %d", code)
		}
		for _, p := range shippedPlugins {
			if !strings.Contains(out, p) {
				t.Errorf("status does not list %s:\n%s", p, out)
			}
		}
		if !strings.Contains(out, "safety (critical)") {
			t.Errorf("status does not mark safety critical:\n%s", out)
		}
	})

	t.Run("tools", func(t *testing.T) {
		out, _, code := cli(t, "tools", "--json", "-c", config)
		if code != 0 {
			t.Fatalf("tools: exit %d", code)
		}
		var ts []admin.Tool
		if err := json.Unmarshal([]byte(out), &ts); err != nil {
			t.Fatal(err)
		}
		owners := map[string]string{}
		for _, tool := range ts {
			owners[tool.Name] = tool.Owner
		}
		for tool, owner := range map[string]string{"search": "search", "read_file": "files", "list_dir": "files", "write_file": "files", "delete_file": "files"} {
			if owners[tool] != owner {
				t.Errorf("tool %s: owner %q, want %q (tools: %v)", tool, owners[tool], owner, owners)
			}
		}
	})

	t.Run("search finds a known document", func(t *testing.T) {
		r, code := callJSON(t, config, "search", `{"q":"monotonic guard","limit":3}`)
		calls++
		if code != 0 || !r.OK {
			t.Fatalf("search: exit %d, %+v", code, r)
		}
		var v struct {
			Hits []struct {
				Path string
			}
		}
		if err := json.Unmarshal(r.Value, &v); err != nil || len(v.Hits) == 0 {
			t.Fatalf("search value %s: %v", r.Value, err)
		}
		if !strings.Contains(strings.ToLower(v.Hits[0].Path), "guard") {
			t.Errorf("first hit %q; want the document about guards", v.Hits[0].Path)
		}
	})

	t.Run("read inside the root", func(t *testing.T) {
		r, code := callJSON(t, config, "read_file", `{"path":"notes.md"}`)
		calls++
		if code != 0 || !r.OK || !strings.Contains(string(r.Value), "first notes") {
			t.Fatalf("read_file notes.md: exit %d, %+v %s", code, r, r.Value)
		}
	})

	t.Run("read outside the root is denied by safety", func(t *testing.T) {
		r, code := callJSON(t, config, "read_file", `{"path":"../outside.txt"}`)
		calls++
		if code != 1 || r.OK || r.Error == nil || r.Error.Code != "DENIED" || r.DecidedBy != "safety" {
			t.Fatalf("read_file ../outside.txt: exit %d, %+v", code, r)
		}
	})

	t.Run("delete is asked and refused without a terminal", func(t *testing.T) {
		r, code := callJSON(t, config, "delete_file", `{"path":"todo.md"}`)
		calls++
		if code != 1 || r.Error == nil || r.Error.Code != "DENIED" || !strings.Contains(r.Error.Message, "approval") {
			t.Fatalf("delete_file: exit %d, %+v", code, r)
		}
		if _, err := os.Stat(filepath.Join(dir, "workspace", "todo.md")); err != nil {
			t.Errorf("the file was deleted: %v", err)
		}
	})

	// Credentials: made now, never committed; none may reach a reason, the
	// host's log or the audit log.
	fakes := fake.New(16)
	awsKey := fakes.AWSAccessKey()
	pemKey := fake.ECKey(t)
	leaks := []string{awsKey, strings.Split(pemKey, "\n")[1]}

	t.Run("a private key in a result is redacted", func(t *testing.T) {
		content := "# staging deploy key\n" + pemKey + "# end\n"
		if err := os.WriteFile(filepath.Join(dir, "workspace", "deploy-key.pem"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		r, code := callJSON(t, config, "read_file", `{"path":"deploy-key.pem"}`)
		calls++
		if code != 0 || !r.OK {
			t.Fatalf("read_file: exit %d, %+v", code, r)
		}
		var v struct {
			Content string
			Size    int
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			t.Fatal(err)
		}
		if want := "# staging deploy key\n[redacted: private-key]\n# end\n"; v.Content != want || v.Size != len(content) {
			t.Errorf("content %q size %d, want %q size %d (the rest untouched)", v.Content, v.Size, want, len(content))
		}
	})

	t.Run("a write with an AWS key is denied naming the kind", func(t *testing.T) {
		args, _ := json.Marshal(map[string]string{"path": "creds.txt", "content": "[default]\naws_access_key_id = " + awsKey + "\n"})
		r, code := callJSON(t, config, "write_file", string(args))
		calls++
		if code != 1 || r.Error == nil || r.Error.Code != "DENIED" || r.DecidedBy != "safety" ||
			!strings.Contains(r.Error.Message, "aws-access-key in /content") {
			t.Fatalf("write_file: exit %d, %+v", code, r)
		}
		if _, err := os.Stat(filepath.Join(dir, "workspace", "creds.txt")); err == nil {
			t.Error("the file was written")
		}
	})

	t.Run("unknown tool", func(t *testing.T) {
		r, code := callJSON(t, config, "nope", `{}`)
		calls++
		if code != 1 || r.Error == nil || r.Error.Code != "UNKNOWN_TOOL" {
			t.Fatalf("nope: exit %d, %+v", code, r)
		}
	})

	t.Run("usage and connection errors exit 2", func(t *testing.T) {
		if _, _, code := cli(t, "call", "-c", config, "search", "{not json"); code != 2 {
			t.Errorf("bad JSON: exit %d, want 2", code)
		}
		if _, _, code := cli(t, "call", "--socket", filepath.Join(dir, "nothing.sock"), "search", "{}"); code != 2 {
			t.Errorf("no host: exit %d, want 2", code)
		}
	})

	t.Run("stop", func(t *testing.T) {
		if _, stderr, code := cli(t, "stop", "-c", config); code != 0 {
			t.Fatalf("stop: exit %d %s", code, stderr)
		}
		select {
		case <-host.done:
			if host.err != nil {
				t.Fatalf("host run: %v\n%s", host.err, host.stderr)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("host run did not stop")
		}
	})

	t.Run("audit log holds one line per call and detects tampering", func(t *testing.T) {
		logPath := filepath.Join(dir, "run", "audit", "audit.log")
		data, err := os.ReadFile(logPath)
		if err != nil {
			t.Fatal(err)
		}
		for _, secret := range leaks {
			if strings.Contains(string(data), secret) || strings.Contains(host.stderr.String(), secret) {
				t.Errorf("a credential reached the audit log or the host's log")
			}
		}
		lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
		if len(lines) != calls {
			t.Fatalf("audit log has %d lines for %d calls:\n%s", len(lines), calls, data)
		}
		verify := func() (string, int) {
			cmd := exec.Command(pluginPath("audit"), "verify", logPath)
			out, _ := cmd.CombinedOutput()
			return string(out), cmd.ProcessState.ExitCode()
		}
		if out, code := verify(); code != 0 {
			t.Fatalf("verify intact log: exit %d: %s", code, out)
		}
		// Change one byte of the third line.
		offset := len(lines[0]) + 1 + len(lines[1]) + 1 + 10
		data[offset] ^= 0x01
		if err := os.WriteFile(logPath, data, 0o600); err != nil {
			t.Fatal(err)
		}
		out, code := verify()
		if code != 1 || !strings.Contains(out, ":3:") {
			t.Fatalf("verify tampered log: exit %d: %s (want line 3 reported)", code, out)
		}
	})
}
