package main

import (
	"bytes"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/plugkit-go/plugkit/internal/testkit/testenv"
	"github.com/plugkit-go/plugkit/plugins/mcp/launcher"
)

// TestLauncherSkipsTheBridgesInit: the launcher, which lives as long as
// its server, is served before the packages only the bridge needs
// initialize (package launcher/early), so it never holds what their
// initialisation allocates (≈0.6 MB: the bridge's regexps, gRPC, the MCP
// SDK, JSON Schema). The runtime's init trace names every package
// initialized before the launcher took over.
func TestLauncherSkipsTheBridgesInit(t *testing.T) {
	needBinaries(t)
	noLeaks(t)
	cmd := exec.Command(bin("plugins/mcp"), launcher.Arg, strconv.Itoa(os.Getpid()), "--", testenv.LookPath(t, "true"))
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("launcher: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(stderr.String(), launcher.Prefix+"server exited\n") {
		t.Fatalf("the launcher did not run the server:\n%s", stderr.String())
	}
	inited := map[string]bool{}
	for line := range strings.Lines(stderr.String()) {
		// "init PACKAGE @0.1 ms, 0.01 ms clock, 512 bytes, 3 allocs"
		if f := strings.Fields(line); len(f) > 2 && f[0] == "init" {
			inited[f[1]] = true
		}
	}
	if len(inited) == 0 {
		t.Fatalf("no init trace:\n%s", stderr.String())
	}
	for _, pkg := range []string{
		"main", // the bridge's own: its description rules' regexps
		"github.com/modelcontextprotocol/go-sdk/mcp",
		"github.com/google/jsonschema-go/jsonschema",
		"github.com/hashicorp/go-plugin",
		"google.golang.org/grpc",
	} {
		if inited[pkg] {
			t.Errorf("the launcher initialized %s, which only the bridge needs", pkg)
		}
	}
}
