package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/plugkit-go/plugkit/bench/sample"
)

// BenchmarkBridgeOverhead calls the same echo tool of the same server two
// ways, with the Go SDK's client over stdio: directly, and through the
// gateway (`host mcp` → pipeline → this plugin → the server). The ratio of
// the two is the price of governing the server. gateway-full adds the
// sample's safety rules and a critical audit fsynced on every batch, as
// bench-peers' plugkit runs. Each is measured with a client of the newest
// protocol (the client's default) and of 2025-11-25, whose tools/call the
// stdio front end and the bridge serve on their hot paths.
func BenchmarkBridgeOverhead(b *testing.B) {
	needBinaries(b)
	servers := []struct{ name, argv0 string }{
		{"server-everything", ""},
		{"go-test-server", bin("mcp-test-server")},
	}
	for _, s := range servers {
		b.Run(s.name, func(b *testing.B) {
			argv0 := s.argv0
			if argv0 == "" {
				argv0 = npmServer(b, "mcp-server-everything")
			}
			gateway := func(b *testing.B, tools, extra string) *exec.Cmd {
				dir := b.TempDir()
				config := filepath.Join(dir, "gateway.hcl")
				hcl := fmt.Sprintf(`
plugin "bridge" {
  path = %q
  config {
    command = [%q]
    prefix  = "b"
    %s
  }
}
`, bin("plugins/mcp"), argv0, tools) + extra
				if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
					b.Fatal(err)
				}
				return exec.Command(bin("host"), "mcp", "-c", config)
			}
			for _, version := range []string{"", "2025-11-25"} {
				name := "latest"
				if version != "" {
					name = version
				}
				b.Run("direct/"+name, func(b *testing.B) {
					benchEcho(b, "echo", version, exec.Command(argv0))
				})
				b.Run("gateway/"+name, func(b *testing.B) {
					benchEcho(b, "b_echo", version, gateway(b, "", ""))
				})
				// gateway-safety and gateway-audit are gateway-full's two
				// parts alone: what each adds to a call.
				for _, v := range []struct{ name, rules string }{
					{"gateway-safety", safetyRules(b)},
					{"gateway-audit", fmt.Sprintf(auditRules, bin("plugins/audit"), filepath.Join(b.TempDir(), "audit.log"))},
					{"gateway-full", safetyRules(b) + fmt.Sprintf(auditRules, bin("plugins/audit"), filepath.Join(b.TempDir(), "audit.log"))},
				} {
					b.Run(v.name+"/"+name, func(b *testing.B) {
						// echo read-only, as bench-peers says: the sample's
						// rules ask about any other tool, and nobody
						// answers here.
						benchEcho(b, "b_echo", version, gateway(b, `tools { read_only = ["echo"] }`, v.rules))
					})
				}
			}
		})
	}
}

// safetyRules are the sample's safety rules, as config.hcl has them and
// bench-peers' plugkit runs them.
func safetyRules(b *testing.B) string {
	block, err := sample.PluginBlock("../../config.hcl", "safety", bin("plugins/safety"))
	if err != nil {
		b.Fatal(err)
	}
	return block
}

// auditRules is a critical audit fsynced on every batch, as bench-peers'
// plugkit runs it.
const auditRules = `
plugin "audit" {
  path     = %q
  critical = true
  config {
    path  = %q
    fsync = "always"
  }
}
`

// benchEcho connects to the server cmd starts, with a client of protocol
// version (the client's default when empty), and calls tool b.N times.
func benchEcho(b *testing.B, tool, version string, cmd *exec.Cmd) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		b.Fatal(err)
	}
	defer cs.Close()
	params := &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"message": "hello"}}
	// The gateway lists the tool once its plugin is active; wait for it.
	deadline := time.Now().Add(time.Minute)
	for {
		res, err := cs.CallTool(ctx, params)
		if err == nil && !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s never answered: %v %+v", tool, err, res)
		}
		time.Sleep(50 * time.Millisecond)
	}
	b.ResetTimer()
	for b.Loop() {
		res, err := cs.CallTool(ctx, params)
		if err != nil || res.IsError {
			b.Fatalf("%s: %v %+v", tool, err, res)
		}
	}
}
