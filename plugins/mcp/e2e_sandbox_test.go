package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
)

// TestFilesystemServerSandboxed: a bridged MCP server runs in the bridge
// plugin's sandbox, since what the bridge starts inherits it. The real
// filesystem server is given a root (the test folder) wider than the
// sandbox's read list (allowed/ only): the pipeline lets every read
// through, the server's own check lets every read under its root through,
// and still a file outside allowed/ cannot be read or listed. The same
// deployment without the sandbox reads it, so it is the sandbox that says
// no, not the server.
func TestFilesystemServerSandboxed(t *testing.T) {
	needBinaries(t)
	server := npmServer(t, "mcp-server-filesystem")
	script, err := filepath.EvalSymlinks(server)
	if err != nil {
		t.Fatal(err)
	}
	nodePath, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node: %v", err)
	}
	if nodePath, err = filepath.EvalSymlinks(nodePath); err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs(filepath.Join("testdata", "servers", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	noLeaks(t)

	for _, sandboxed := range []bool{true, false} {
		t.Run(fmt.Sprintf("sandboxed=%v", sandboxed), func(t *testing.T) {
			dir := t.TempDir()
			for name, content := range map[string]string{"allowed/notes.md": "first notes\n", "outside/secret.txt": "not for the server\n"} {
				p := filepath.Join(dir, name)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			// node runs the server's script: node is the one binary run;
			// it reads the script's package, its own folder and
			// OpenSSL's configuration.
			sandbox := fmt.Sprintf(`
  sandbox {
    read    = ["allowed", %q, %q, "/etc/ssl"]
    exec    = [%q]
    network = "none"
  }`, modules, filepath.Dir(filepath.Dir(nodePath)), nodePath)
			if !sandboxed {
				sandbox = ""
			}
			config := deployment(t, dir, fmt.Sprintf(`
plugin "fs" {
  path = %q
  config {
    command = [%q, %q, %q]
    prefix  = "fs"
    trust_hints = true
  }%s
}
`, bin("plugins/mcp"), nodePath, script, dir, sandbox))
			h := startHost(t, config, 2)
			if sandboxed {
				out, _, _ := cli(t, "status", "--json", "-c", config)
				var st struct {
					Plugins []struct {
						Name    string
						Sandbox struct{ State string }
					}
				}
				if err := json.Unmarshal([]byte(out), &st); err != nil {
					t.Fatal(err)
				}
				for _, p := range st.Plugins {
					if p.Name == "fs" && p.Sandbox.State != "enforced" {
						testenv.Missing(t, "a kernel that enforces the sandbox (Landlock, network namespaces): fs's sandbox is %q", p.Sandbox.State)
					}
				}
			}
			arg := func(name string) string { b, _ := json.Marshal(filepath.Join(dir, name)); return string(b) }

			r := h.call(t, "fs_read_text_file", `{"path":`+arg("allowed/notes.md")+`}`)
			if !r.OK || text(t, r.Value) != "first notes\n" {
				t.Fatalf("read allowed/notes.md: %+v %s", r, r.Value)
			}
			r = h.call(t, "fs_read_text_file", `{"path":`+arg("outside/secret.txt")+`}`)
			switch {
			case sandboxed && (r.code() != "TOOL_ERROR" || !strings.Contains(r.message(), "EACCES")):
				t.Errorf("read outside/secret.txt in the sandbox: %+v %s, want TOOL_ERROR EACCES", r, r.Value)
			case !sandboxed && (!r.OK || text(t, r.Value) != "not for the server\n"):
				t.Errorf("read outside/secret.txt without a sandbox: %+v %s (the control: the server itself allows it)", r, r.Value)
			}
			r = h.call(t, "fs_list_directory", `{"path":`+arg("outside")+`}`)
			if sandboxed && (r.code() != "TOOL_ERROR" || !strings.Contains(r.message(), "EACCES")) {
				t.Errorf("list outside/ in the sandbox: %+v %s, want TOOL_ERROR EACCES", r, r.Value)
			}
		})
	}
}

// TestEverythingServerEgressNone: the real server-everything behind a
// bridge whose sandbox has egress = [] (a network namespace whose only way
// out is a proxy that allows nothing) still works, needing no network, and
// finds the proxy's variables in its environment.
func TestEverythingServerEgressNone(t *testing.T) {
	needBinaries(t)
	server := npmServer(t, "mcp-server-everything")
	script, err := filepath.EvalSymlinks(server)
	if err != nil {
		t.Fatal(err)
	}
	nodePath, err := exec.LookPath("node")
	if err != nil {
		testenv.Missing(t, "node: %v", err)
	}
	if nodePath, err = filepath.EvalSymlinks(nodePath); err != nil {
		t.Fatal(err)
	}
	modules, err := filepath.Abs(filepath.Join("testdata", "servers", "node_modules"))
	if err != nil {
		t.Fatal(err)
	}
	noLeaks(t)
	dir := t.TempDir()
	config := deployment(t, dir, fmt.Sprintf(`
plugin "everything" {
  path = %q
  config {
    command = [%q, %q]
    prefix  = "ev"
    trust_hints = true
  }
  sandbox {
    read   = [%q, %q, "/etc/ssl"]
    exec   = [%q]
    egress = []
  }
}
`, bin("plugins/mcp"), nodePath, script, modules, filepath.Dir(filepath.Dir(nodePath)), nodePath))
	h := startHost(t, config, 2)
	out, _, _ := cli(t, "status", "--json", "-c", config)
	var st struct {
		Plugins []struct {
			Name    string
			Sandbox struct{ State, Egress string }
		}
	}
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Plugins {
		if p.Name == "everything" && (p.Sandbox.State != "enforced" || p.Sandbox.Egress != "proxy in netns") {
			testenv.Missing(t, "a kernel that enforces the sandbox with a network namespace: everything's sandbox is %+v", p.Sandbox)
		}
	}
	r := h.call(t, "ev_echo", `{"message":"hi"}`)
	if !r.OK || !strings.Contains(string(r.Value), "Echo: hi") {
		t.Fatalf("ev_echo behind egress = []: %+v %s", r, r.Value)
	}
	r = h.call(t, "ev_get-env", `{}`)
	var env map[string]string
	if !r.OK || json.Unmarshal([]byte(text(t, r.Value)), &env) != nil {
		t.Fatalf("ev_get-env: %+v %s", r, r.Value)
	}
	if env["HTTPS_PROXY"] != "http://127.0.0.1:3128" || env["NO_PROXY"] == "" {
		t.Errorf("the server's environment has no proxy variables: %v", env)
	}
}
