package e2e

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// TestAttackHostileDeploymentFile: a deployment file made to overflow the
// HCL parser's stack (the attack's 200,000 nested blocks, 1.2 MB; and
// 20,000 nested brackets in a few KB; `x = [1]` then `[*]` 200,000 times,
// 600 KB) is refused with a diagnostic by
// `host validate`, `host reload` and SIGHUP, and the running host keeps
// serving its deployment unchanged.
func TestAttackHostileDeploymentFile(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.md"), []byte("still here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	config := filepath.Join(dir, "config.hcl")
	good := fmt.Sprintf("host {\n  admin_socket = \"host.sock\"\n}\nplugin \"files\" {\n  path = %q\n  config {\n    root = %q\n  }\n}\n", pluginPath("files"), dir)
	if err := os.WriteFile(config, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 1)
	before := statusOf(t, config)["files"]

	for _, c := range []struct{ name, body, want string }{
		{"200000 nested blocks", strings.Repeat("a {\n", 200000) + strings.Repeat("}\n", 200000), "Deployment file too large"},
		{"20000 nested brackets", "x = " + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + "\n", "Nesting too deep"},
		// 600 KB, under the size limit: the parser recursed once per splat.
		{"200000 chained splats", "x = [1]" + strings.Repeat("[*]", 200000) + "\n", "Nesting too deep"},
	} {
		t.Run(c.name, func(t *testing.T) {
			hostile := filepath.Join(dir, "hostile.hcl")
			if err := os.WriteFile(hostile, []byte(good+c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			_, stderr, code := cli(t, "validate", "-c", hostile)
			if code != 1 || !strings.Contains(stderr, c.want) || !strings.Contains(stderr, "hostile.hcl:") || strings.Contains(stderr, "goroutine ") {
				t.Fatalf("validate: exit %d, want 1 with %q:\n%s", code, c.want, tail(stderr))
			}

			// The running host's own file turns hostile: reload and SIGHUP.
			if err := os.WriteFile(config, []byte(good+c.body), 0o644); err != nil {
				t.Fatal(err)
			}
			// The client cannot read the socket's name from the file: it
			// finds the host running that file in the host registry, and
			// the host refuses the file...
			_, stderr, code = cli(t, "reload", "-c", config)
			if code != 1 || !strings.Contains(stderr, "using the admin socket of the host running it") || !strings.Contains(stderr, c.want) {
				t.Fatalf("reload: exit %d, want 1 from the host found in the registry, with %q:\n%s", code, c.want, tail(stderr))
			}
			// ...as it does when told where.
			_, stderr, code = cli(t, "reload", "--socket", filepath.Join(dir, "host.sock"), "-c", config)
			if code != 1 || !strings.Contains(stderr, c.want) {
				t.Fatalf("reload: exit %d, want 1 with %q:\n%s", code, c.want, tail(stderr))
			}
			logged := strings.Count(h.stderr.String(), "is not valid; nothing changed")
			if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
				t.Fatal(err)
			}
			waitRefusal(t, h, "is not valid; nothing changed", logged)
			if !strings.Contains(h.stderr.String(), c.want) {
				t.Errorf("the refusal does not say why:\n%s", tail(h.stderr.String()))
			}
			if err := os.WriteFile(config, []byte(good), 0o644); err != nil {
				t.Fatal(err)
			}
			r, code := callJSON(t, config, "read_file", `{"path":"notes.md"}`)
			if code != 0 || !r.OK || !strings.Contains(string(r.Value), "still here") {
				t.Fatalf("a call after the hostile reloads: exit %d %+v", code, r)
			}
			if st := statusOf(t, config)["files"]; st.PID != before.PID || st.State != "ACTIVE" {
				t.Fatalf("the running deployment changed: %+v", st)
			}
		})
	}
}

// TestAttackHostileKeysFile: an mcp_auth keys file of 200,000 nested
// brackets crashed authn.LoadKeys (a stack overflow, at start or on
// SIGHUP). `host validate` now refuses it with its file and line, and a
// running host told to reload it by SIGHUP keeps the keys in use and says
// why.
func TestAttackHostileKeysFile(t *testing.T) {
	needBinaries(t)
	dir := t.TempDir()
	keys := filepath.Join(dir, "keys.hcl")
	key, stderr, code := cli(t, "key", "add", "ci-bot", "-f", keys)
	if code != 0 {
		t.Fatalf("host key add: exit %d %s", code, stderr)
	}
	key = strings.TrimSpace(key)
	addr := freeLoopbackAddr(t)
	config := filepath.Join(dir, "config.hcl")
	good := fmt.Sprintf("host {\n  admin_socket = \"host.sock\"\n  mcp = %q\n  mcp_auth {\n    keys = %q\n  }\n}\nplugin \"files\" {\n  path = %q\n  config {\n    root = %q\n  }\n}\n", addr, keys, pluginPath("files"), dir)
	if err := os.WriteFile(config, []byte(good), 0o644); err != nil {
		t.Fatal(err)
	}
	h := startHost(t, config, 1)
	initialize := func(key string) int {
		t.Helper()
		req, _ := http.NewRequest("POST", "http://"+addr+"/mcp", strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("Authorization", "Bearer "+key)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := initialize(key); code != http.StatusOK {
		t.Fatalf("initialize with the key: %d", code)
	}

	hostile := "key \"a\" {\n  attributes = " + strings.Repeat("[", 200000) + strings.Repeat("]", 200000) + "\n}\n"
	if err := os.WriteFile(keys, []byte(hostile), 0o600); err != nil {
		t.Fatal(err)
	}
	_, stderr, code = cli(t, "validate", "-c", config)
	if code != 1 || !strings.Contains(stderr, "Nesting too deep") || !strings.Contains(stderr, "keys.hcl:2") || strings.Contains(stderr, "goroutine ") {
		t.Fatalf("validate: exit %d, want 1 naming keys.hcl line 2:\n%s", code, tail(stderr))
	}
	logged := strings.Count(h.stderr.String(), "keys file not reloaded")
	if err := h.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	waitRefusal(t, h, "keys file not reloaded", logged)
	if !strings.Contains(h.stderr.String(), "keys.hcl:2") {
		t.Errorf("the refusal does not name the file and line:\n%s", tail(h.stderr.String()))
	}
	if code := initialize(key); code != http.StatusOK {
		t.Fatalf("initialize with the key in use after the refused reload: %d", code)
	}
}

// waitRefusal waits for the host to log refusal once more than the logged
// times it had before a SIGHUP, failing if it exits instead.
func waitRefusal(t *testing.T, h *running, refusal string, logged int) {
	t.Helper()
	if !testkit.Eventually(30*time.Second, func() bool {
		select {
		case <-h.done:
			t.Fatalf("the host exited on SIGHUP: %v\n%s", h.err, tail(h.stderr.String()))
		default:
		}
		return strings.Count(h.stderr.String(), refusal) != logged
	}) {
		t.Fatalf("SIGHUP: no refusal logged\n%s", tail(h.stderr.String()))
	}
}
