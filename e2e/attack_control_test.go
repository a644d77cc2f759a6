package e2e

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// hostilePath is where TestMain builds internal/testkit/hostileplugin.
func hostilePath(dir string) string { return filepath.Join(dir, "plugins", "hostile") }

// hostileOutcome is what the hostile plugin's tool answers.
type hostileOutcome struct {
	Done   bool   `json:"done"`
	Detail string `json:"detail"`
}

// hostileDeployment writes a deployment of two hostile plugins into dir:
// "caged", sandboxed (network none, nothing of the file system declared),
// and "free", not sandboxed; each serves a tool of its own name. extra is
// added to the host block, more after the plugins.
func hostileDeployment(t *testing.T, dir, extra, more string) string {
	t.Helper()
	hcl := fmt.Sprintf(`
host {
  admin_socket     = "run/host.sock"
  approval_timeout = "10s"
%[2]s}

plugin "caged" {
  path = %[1]q
  config {
    tool = "caged"
  }
  sandbox {
    network = "none"
  }
}

plugin "free" {
  path = %[1]q
  config {
    tool = "free"
  }
}
%[3]s`, hostilePath(bins.Dir()), extra, more)
	path := filepath.Join(dir, "config.hcl")
	if err := os.WriteFile(path, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// hostileCall has the hostile plugin behind tool try args.
func hostileCall(t *testing.T, config, tool string, args map[string]any) hostileOutcome {
	t.Helper()
	b, _ := json.Marshal(args)
	r, code := callJSON(t, config, tool, string(b))
	if code != 0 || !r.OK {
		t.Fatalf("host call %s %s: exit %d %+v", tool, b, code, r)
	}
	var o hostileOutcome
	if err := json.Unmarshal(r.Value, &o); err != nil {
		t.Fatalf("%s: %s: %v", tool, r.Value, err)
	}
	return o
}

// TestAttackInheritedDescriptors starts the host as `host run 7<secret
// 8>>log` would: neither plugin, sandboxed or not, can read the secret
// through descriptor 7 or write the log through descriptor 8, and none of
// its descriptors is either file.
func TestAttackInheritedDescriptors(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	config := hostileDeployment(t, dir, "", "")
	secretPath := filepath.Join(dir, "secret.txt")
	logPath := filepath.Join(dir, "operator.log")
	const secret = "the operator's secret"
	if err := os.WriteFile(secretPath, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	secretFile, err := os.Open(secretPath)
	if err != nil {
		t.Fatal(err)
	}
	defer secretFile.Close()
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer logFile.Close()
	cmd := exec.Command(bins.Path("host"), "run", "-c", config)
	// ExtraFiles[i] is descriptor 3+i: 7 and 8, as a shell's 7< and 8>>.
	cmd.ExtraFiles = []*os.File{nil, nil, nil, nil, secretFile, logFile}
	h := startHostCmd(t, cmd, config, 2)
	defer stopRunning(t, config, h)

	for _, tool := range []string{"caged", "free"} {
		t.Run(tool, func(t *testing.T) {
			if o := hostileCall(t, config, tool, map[string]any{"what": "readfd", "count": 7}); o.Done || strings.Contains(o.Detail, secret) {
				t.Errorf("the plugin read the host's descriptor 7: %+v", o)
			} else {
				t.Logf("read descriptor 7: %s", o.Detail)
			}
			if o := hostileCall(t, config, tool, map[string]any{"what": "writefd", "count": 8}); o.Done {
				t.Errorf("the plugin wrote the host's descriptor 8: %+v", o)
			} else {
				t.Logf("write descriptor 8: %s", o.Detail)
			}
			o := hostileCall(t, config, tool, map[string]any{"what": "fds"})
			t.Logf("its descriptors: %s", o.Detail)
			if strings.Contains(o.Detail, secretPath) || strings.Contains(o.Detail, logPath) {
				t.Errorf("the plugin holds a descriptor the host inherited: %s", o.Detail)
			}
		})
	}
	if b, _ := os.ReadFile(logPath); len(b) > 0 {
		t.Errorf("the operator's log was written: %q", b)
	}
}

// TestAttackPluginDrivesAdmin has plugins dial their host's admin socket
// and ask for its status and for a call: the host refuses them before it
// reads anything, sandboxed or not, and says why in its log.
func TestAttackPluginDrivesAdmin(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	config := hostileDeployment(t, dir, "", "")
	h := startHost(t, config, 2)
	defer stopRunning(t, config, h)
	socket := filepath.Join(dir, "run", "host.sock")
	call := `POST /v1/call {"tool":"free","arguments":{"what":"write","path":"` + filepath.Join(dir, "pwned.txt") + `"},"interactive":true}`
	for _, tool := range []string{"caged", "free"} {
		for _, req := range []string{"GET /v1/status", call} {
			t.Run(tool+" "+req[:strings.IndexByte(req, ' ')], func(t *testing.T) {
				o := hostileCall(t, config, tool, map[string]any{"what": "admin", "path": socket, "addr": req})
				t.Logf("%s", o.Detail)
				if o.Done || strings.Contains(o.Detail, `"plugins"`) {
					t.Errorf("the plugin drove the admin API: %s", o.Detail)
				}
			})
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pwned.txt")); err == nil {
		t.Errorf("a plugin's call through the admin API wrote a file")
	}
	if !strings.Contains(h.stderr.String(), "admin socket: connection refused") {
		t.Errorf("the host did not log the refusals\n%s", tail(h.stderr.String()))
	}
	// The host's own user is still served.
	if out, stderr, code := cli(t, "status", "-c", config); code != 0 || !strings.Contains(out, "caged") {
		t.Fatalf("host status: exit %d\n%s%s", code, out, stderr)
	}
}

// TestAttackAnswerFromAnotherClient puts a question to one client (a
// write_file call that asks for approval) and answers it from another
// connection, knowing its id: the answer is refused and the question
// stays with the client that made the call, whose answer is taken.
func TestAttackAnswerFromAnotherClient(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	config := deploymentFile(t, dir)
	h := startHost(t, config, len(shippedPlugins))
	defer stopRunning(t, config, h)
	socket := filepath.Join(dir, "run", "host.sock")

	dial := func() net.Conn {
		c, err := net.DialTimeout("unix", socket, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_ = c.SetDeadline(time.Now().Add(30 * time.Second))
		return c
	}
	post := func(path string, body any) (int, string) {
		b, _ := json.Marshal(body)
		c := dial()
		defer c.Close()
		fmt.Fprintf(c, "POST %s HTTP/1.1\r\nHost: host\r\nContent-Type: application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s", path, len(b), b)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("POST %s: %v", path, err)
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(out)
	}

	// The caller: a call that waits for an approval.
	caller := dial()
	defer caller.Close()
	b, _ := json.Marshal(admin.CallRequest{Tool: "write_file", Arguments: json.RawMessage(`{"path":"approved.md","content":"x"}`), Interactive: true})
	fmt.Fprintf(caller, "POST /v1/call HTTP/1.1\r\nHost: host\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(b), b)
	resp, err := http.ReadResponse(bufio.NewReader(caller), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	events := bufio.NewScanner(resp.Body)
	next := func() admin.CallEvent {
		if !events.Scan() {
			t.Fatalf("the call's stream ended: %v", events.Err())
		}
		var ev admin.CallEvent
		if err := json.Unmarshal(events.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	ev := next()
	if ev.Question == nil {
		t.Fatalf("no question: %+v", ev)
	}

	// Another client approves it with the id alone.
	code, body := post("/v1/answer", admin.Answer{ID: ev.Question.ID, Approved: true})
	t.Logf("answer from another client: %d %s", code, body)
	if code == http.StatusOK {
		t.Fatalf("an answer from another client was taken: %s", body)
	}
	// A wrong key does no better.
	if code, body := post("/v1/answer", admin.Answer{ID: ev.Question.ID, Key: "guess", Approved: true}); code == http.StatusOK {
		t.Fatalf("an answer with a guessed key was taken: %s", body)
	}
	// The client that made the call denies it, and that is what counts.
	if code, body := post("/v1/answer", admin.Answer{ID: ev.Question.ID, Key: ev.AnswerKey, Approved: false}); code != http.StatusOK {
		t.Fatalf("the caller's own answer: %d %s", code, body)
	}
	ev = next()
	if ev.Result == nil || ev.Result.OK {
		t.Fatalf("the call was not denied: %+v", ev.Result)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "approved.md")); err == nil {
		t.Errorf("the file was written")
	}
}

// TestAttackSandboxWritesSocketFolder gives a sandboxed plugin write on
// the admin socket's folder, or on a folder above it, as the sample once
// gave audit run/: validate and run refuse the deployment, naming the
// plugin and the folder.
func TestAttackSandboxWritesSocketFolder(t *testing.T) {
	needShippedDeployment(t)
	for _, write := range []string{"run", "."} {
		t.Run(write, func(t *testing.T) {
			dir := t.TempDir()
			config := hostileDeployment(t, dir, "", fmt.Sprintf(`
plugin "writer" {
  path = %q
  config {
    tool = "writer"
  }
  sandbox {
    write = [%q]
  }
}
`, hostilePath(bins.Dir()), write))
			for _, cmd := range []string{"validate", "run"} {
				_, stderr, code := cli(t, cmd, "-c", config)
				t.Logf("host %s: exit %d: %s", cmd, code, stderr)
				if code == 0 {
					t.Fatalf("host %s accepted a plugin that can write the admin socket's folder", cmd)
				}
				for _, want := range []string{"Sandbox can write the host's control plane", `Plugin "writer" may write`, filepath.Join(dir, "run")} {
					if !strings.Contains(stderr, want) {
						t.Errorf("host %s does not say %q", cmd, want)
					}
				}
			}
		})
	}
}

// TestAttackPluginReplacesSocket has a plugin remove the admin socket and
// serve its own in its place (recording its own pid where the host
// recorded its): `host call` refuses it before sending anything, so the
// impostor never sees the call's arguments.
func TestAttackPluginReplacesSocket(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	config := hostileDeployment(t, dir, "", "")
	h := startHost(t, config, 2)
	socket := filepath.Join(dir, "run", "host.sock")
	// The unsandboxed plugin can write run/: it takes the socket's place.
	if o := hostileCall(t, config, "free", map[string]any{"what": "squat", "path": socket, "count": 1}); !o.Done {
		t.Fatalf("the plugin could not squat the socket: %s", o.Detail)
	}
	out, stderr, code := cli(t, "call", "-c", config, "caged", `{"what":"read","path":"the secret argument"}`)
	t.Logf("host call: exit %d: %s%s", code, out, stderr)
	if code == 0 || !strings.Contains(stderr, "which is not the host") || !strings.Contains(stderr, "nothing was sent") {
		t.Errorf("host call through the impostor's socket: exit %d, stderr %q", code, stderr)
	}
	// What the impostor received, as it recorded it.
	var seen []byte
	testkit.Eventually(10*time.Second, func() bool {
		seen, _ = os.ReadFile(socket + ".seen")
		return len(seen) > 0
	})
	t.Logf("the impostor saw: %q", seen)
	if len(seen) == 0 {
		t.Fatal("the impostor saw no connection")
	}
	if strings.Contains(string(seen), "the secret argument") || strings.Contains(string(seen), "POST") {
		t.Errorf("the impostor received the call: %q", seen)
	}
	// The host still runs, on the socket the plugin unlinked: it is
	// stopped by signal.
	_ = h.cmd.Process.Signal(syscall.SIGTERM)
	<-h.done
}
