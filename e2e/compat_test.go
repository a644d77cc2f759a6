package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/plugkit-go/plugkit/admin"
	"github.com/plugkit-go/plugkit/internal/testkit/testkit"
)

// writeHostConfig writes a deployment of one plugin block into dir.
func writeHostConfig(t *testing.T, dir, block string) string {
	t.Helper()
	config := filepath.Join(dir, "deployment.hcl")
	hcl := "host {\n  admin_socket = \"run/host.sock\"\n  shutdown_timeout = \"2s\"\n}\n" + block
	if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
		t.Fatal(err)
	}
	return config
}

// TestProtocol1PluginUnderTodaysHost: a plugin built against a frozen copy
// of the SDK of protocol version 1 (testdata/sdk-protocol1: the SDK as it
// was before calls went as frames) runs under today's host, which speaks
// 1 with it (RPCs per call): its tool, its guard, its stage-1 and stage-3
// wrappers (Host.Next), its stage-4 filter and its observer are each
// driven as they were then.
func TestProtocol1PluginUnderTodaysHost(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "oldplugin")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = filepath.Join("testdata", "sdk-protocol1", "plugin")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the plugin against the protocol-1 SDK: %v\n%s", err, out)
	}
	config := writeHostConfig(t, dir, "plugin \"oldplugin\" {\n  path = \""+bin+"\"\n}\n")
	run := startHost(t, config, 1)

	out, _, code := cli(t, "status", "--json", "-c", config)
	var st admin.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || code != 0 {
		t.Fatalf("status: %v (exit %d) %s", err, code, out)
	}
	if p := st.Plugins[0]; p.Protocol != 1 || p.Calls != "rpc" {
		t.Errorf("the old plugin runs with protocol %d, calls %q; want 1, rpc", p.Protocol, p.Calls)
	}

	for _, c := range []struct{ text, want string }{
		{"hello", `ok "hello"`},
		{"forbidden words", "DENIED the old guard refuses it"},
		{"deny me", "DENIED the old listener denies it"},
		{"rude words", `ok "[redacted]"`},
	} {
		r, _ := callJSON(t, config, "old_echo", `{"text":"`+c.text+`"}`)
		got := "ok " + string(r.Value)
		if !r.OK {
			got = "no error"
			if r.Error != nil {
				got = r.Error.Code + " " + r.Error.Message
			}
		}
		if !strings.HasPrefix(got, c.want) {
			t.Errorf("old_echo %q = %s, want %s\n%s", c.text, got, c.want, run.stderr)
		}
	}
	// The observer sees the four results, after the callers have theirs.
	var r admin.Result
	if !testkit.Eventually(30*time.Second, func() bool {
		r, _ = callJSON(t, config, "old_results", `{}`)
		return r.OK && string(r.Value) == "4"
	}) {
		t.Fatalf("the old plugin's observer saw %s results of 4", r.Value)
	}
}

// TestNewerProtocolPluginRefused: a plugin whose SDK speaks only a
// protocol version newer than the host's is refused at start, with a
// message naming both versions and what to do.
func TestNewerProtocolPluginRefused(t *testing.T) {
	needShippedDeployment(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "newer")
	// The SDK's served versions are set at link time for tests.
	build := exec.Command("go", "build", "-o", bin, "-ldflags=-X github.com/plugkit-go/plugkit/shared/sdk.servedProtocols=3", "../plugins/safety")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	config := writeHostConfig(t, dir, "plugin \"newer\" {\n  path = \""+bin+"\"\n}\n")
	_, stderr, code := cli(t, "validate", "-c", config)
	if code == 0 {
		t.Fatal("validate accepted a plugin of protocol 3")
	}
	for _, want := range []string{`Plugin "newer"`, "speaks plugkit protocol 3", "it speaks 1, 2", "upgrade the host"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("validate's report lacks %q:\n%s", want, stderr)
		}
	}
}
