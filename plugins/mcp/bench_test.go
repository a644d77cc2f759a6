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
)

// BenchmarkBridgeOverhead calls the same echo tool of the same server two
// ways, with the Go SDK's client over stdio: directly, and through the
// gateway (`host mcp` → pipeline → this plugin → the server). The ratio of
// the two is the price of governing the server.
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
			b.Run("direct", func(b *testing.B) {
				benchEcho(b, "echo", exec.Command(argv0))
			})
			b.Run("gateway", func(b *testing.B) {
				dir := b.TempDir()
				config := filepath.Join(dir, "gateway.hcl")
				hcl := fmt.Sprintf(`
plugin "bridge" {
  path = %q
  config {
    command = [%q]
    prefix  = "b"
  }
}
`, bin("plugins/mcp"), argv0)
				if err := os.WriteFile(config, []byte(hcl), 0o644); err != nil {
					b.Fatal(err)
				}
				benchEcho(b, "b_echo", exec.Command(bin("host"), "mcp", "-c", config))
			})
		})
	}
}

// benchEcho connects to the server cmd starts and calls tool b.N times.
func benchEcho(b *testing.B, tool string, cmd *exec.Cmd) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	client := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
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
